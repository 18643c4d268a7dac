"""odeval.compare"""
