"""feedrouter.engine"""
