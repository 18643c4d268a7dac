"""odeval.report"""
