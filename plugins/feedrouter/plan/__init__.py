"""feedrouter.plan"""
