"""Topic archiving: older messages become titled, summarized topics (design seed 001).

Messages start unarchived. When they pass a share of the model's context, one
identification call (or the offline methods) splits the oldest into topics; the
events are linked to their topic, and the context becomes topic summaries plus
the messages still unarchived. What the user says about themselves is kept as
profile facts with provenance. See :class:`TopicArchiver` for the guarantees.
"""

from agentctx.compaction.topics.archiver import TOPICS_JOB, TopicArchiver
from agentctx.compaction.topics.config import TopicArchiveConfig
from agentctx.compaction.topics.identify import TOPICS_SCHEMA
from agentctx.compaction.topics.models import (
    ACTIVE,
    ARCHIVED,
    PROFILE_FIELDS,
    FactDraft,
    ProfileFact,
    Topic,
    TopicDraft,
    TopicPlan,
)

__all__ = [
    "ACTIVE",
    "ARCHIVED",
    "PROFILE_FIELDS",
    "TOPICS_JOB",
    "TOPICS_SCHEMA",
    "FactDraft",
    "ProfileFact",
    "Topic",
    "TopicArchiveConfig",
    "TopicArchiver",
    "TopicDraft",
    "TopicPlan",
]
