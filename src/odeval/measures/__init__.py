"""odeval.measures"""
