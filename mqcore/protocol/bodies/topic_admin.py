"""Bodies of the topic admin requests that carry topic configs: RocketMQ 5's
UPDATE_AND_CREATE_TOPIC_LIST (18), ``CreateTopicListRequestBody``.

One request creates many topics, so a script that makes a thousand topics pays for one
round trip, one ``topics.json`` write and one name-server registration, not a thousand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqcore.common.metadata import TopicConfig
from mqcore.protocol.bodies.base import RemotingBody, as_dict, as_list

__all__ = ["CreateTopicListRequestBody"]


@dataclass(slots=True)
class CreateTopicListRequestBody(RemotingBody):
    """``{"topicConfigList":[TopicConfig, ...]}``; RocketMQ 5 adds ``attributes`` to
    each entry, which this broker has no use for and ignores."""

    topic_config_list: list[TopicConfig] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"topicConfigList": [tc.to_json() for tc in self.topic_config_list]}

    @classmethod
    def from_json(cls, obj: Any) -> CreateTopicListRequestBody:
        entries = as_list(as_dict(obj).get("topicConfigList"))
        return cls([TopicConfig.from_json(entry) for entry in entries])
