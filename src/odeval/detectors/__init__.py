"""odeval.detectors"""
