"""odeval.scaling"""
