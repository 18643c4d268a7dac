"""odeval.protocols"""
