"""odeval.neighbors"""
