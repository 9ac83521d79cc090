"""A Kafka group's bad member as a new user meets it (issue 24): a member id or topic with a lone
surrogate, a subscription of ``None`` — each a typed error naming the member, never a bare
``UnicodeEncodeError`` from the binding."""

from __future__ import annotations

import pytest

from mqbalance.exceptions import InvalidInputError
from mqbalance.kafka import ASSIGNORS, assignor

BAD_ID = "member-\ud800"


@pytest.mark.parametrize("name", ASSIGNORS)
@pytest.mark.parametrize("topics", [["t"], ("t",)], ids=["list", "tuple"])
def test_a_member_id_with_a_lone_surrogate_is_refused_naming_it(name, topics):
    with pytest.raises(InvalidInputError, match="member id is not valid Unicode") as e:
        assignor(name).assign({"t": 4}, {"ok": ["t"], BAD_ID: topics})
    assert e.value.value == BAD_ID and not isinstance(e.value, UnicodeError)


@pytest.mark.parametrize("name", ASSIGNORS)
def test_a_topic_with_a_lone_surrogate_is_refused_naming_its_member(name):
    with pytest.raises(InvalidInputError, match="member 'b': topic name is not valid Unicode") as e:
        assignor(name).assign({"t": 4}, {"a": ["t"], "b": ["t", "t\udfff"]})
    assert e.value.value == "t\udfff"


@pytest.mark.parametrize("name", ASSIGNORS)
def test_a_subscription_of_none_is_refused_naming_its_member(name):
    with pytest.raises(InvalidInputError, match="member 'b'.*got None"):
        assignor(name).assign({"t": 4}, {"a": ["t"], "b": None})


def test_the_grouped_path_of_the_kafka_python_adapter_names_the_member_too():
    with pytest.raises(InvalidInputError, match="member id is not valid Unicode"):
        assignor("range")._assign_grouped([("t", 2)], [(BAD_ID, None, ["t"], None, None)])


def test_good_members_still_get_their_partitions():
    got = assignor("range").assign_lists({"t": 2}, {"a": ["t"], "b": ("t",)})
    assert [tp.partition for tp in got["a"]] == [0] and [tp.partition for tp in got["b"]] == [1]
