"""Compaction: what old history becomes once it leaves the recent window.

Summaries, topics, screenshot placeholders and offloaded tool output all cover
an exact, recorded set of events and never replace them: raw events stay in the
log. :mod:`agentctx.compaction.offline` holds the methods that need no model
endpoint (extractive summaries, topic boundaries, keywords).
"""
