"""feedrouter.output"""
