"""odeval.analysis"""
