"""odeval.measures.internal"""
