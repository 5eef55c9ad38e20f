"""Processes: the children acpcli starts (found and ended, whatever they started), and the
command's supervisor (signals, sudden failures, the event log's clock).
"""
