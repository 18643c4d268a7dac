"""odeval.bench"""
