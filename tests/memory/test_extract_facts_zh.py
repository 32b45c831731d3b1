"""The Chinese fact rules on events a real engine stored: the same subjects as the
English ones, retractions, corrections, and what states nothing."""
# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.memory.extract import extract_declarative
from agentctx.memory.models import MemoryCandidate, MemoryKind

DAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    """An engine that keeps names as written (these tests read 我女儿叫朵朵)."""
    with ContextEngine(url=db_url, home=home, redaction={"names": False}) as eng:
        yield eng


def learned(engine: ContextEngine, *texts: str) -> list[MemoryCandidate]:
    session = engine.create_session(user_id="u1")
    for minute, text in enumerate(texts):
        session.add_message("user", text, ts=DAY + timedelta(minutes=minute))
    return extract_declarative(session.events())


def facts(engine: ContextEngine, *texts: str) -> list[tuple[str | None, str]]:
    return [(c.subject, c.content) for c in learned(engine, *texts)]


def test_the_statements_that_learned_nothing_before(engine: ContextEngine) -> None:
    assert facts(
        engine,
        "我会用Python，帮我看看这段代码",
        "我对花生过敏，外卖点泰国菜安全吗？",
        "我女儿叫朵朵，今年五岁",
        "请用中文回答",
    ) == [
        ("skill: python", "用户会用Python"),
        ("allergy: 花生", "用户对花生过敏"),
        ("family: daughter: 朵朵", "用户的女儿叫朵朵"),
        ("answer style: language", "用户希望用中文回答"),
    ]


def test_what_follows_joining_is_an_employer_only_when_it_names_one(
    engine: ContextEngine,
) -> None:
    """After 入职, a time ("快俩月了") or a question ("要准备些啥") is no employer: it used
    to be stored as "用户在快俩月了工作", superseding the employer the user had named."""
    assert facts(engine, "下周一入职字节跳动") == [("employer", "用户在字节跳动工作")]
    assert [s for s, _ in facts(engine, "入职快俩月了，天天跑车间")] == []
    assert [s for s, _ in facts(engine, "入职要准备些啥")] == []


def test_work_place_languages_and_skills(engine: ContextEngine) -> None:
    assert facts(
        engine,
        "我在招商银行做柜员，客户的问题我老是答不上来",
        "我们上个月搬到成都了，房子还在收拾",
        "我母语是粤语，普通话带口音",
        "我只会拉二胡",
    ) == [
        ("employer", "用户在招商银行工作"),
        ("occupation", "用户的工作是柜员"),
        ("residence", "用户搬到了成都"),
        ("language: 粤语", "用户的母语是粤语"),
        ("language: 普通话", "用户会说普通话"),
        ("skill: 二胡", "用户会拉二胡"),
    ]


def test_names_children_and_lists(engine: ContextEngine) -> None:
    assert facts(
        engine,
        "大家好，我是李娜",
        "我叫王磊，是一名程序员",
        "我会说英语和日语",
        "我女儿小雨九月开始上幼儿园",
        "我有两个孩子",
    ) == [
        ("name", "用户叫李娜"),
        ("name", "用户叫王磊"),
        ("occupation", "用户是程序员"),
        ("language: 英语", "用户会说英语"),
        ("language: 日语", "用户会说日语"),
        ("family: daughter: 小雨", "用户的女儿叫小雨"),
        ("plan: school 小雨", "用户的女儿小雨九月上幼儿园"),
        ("family: child", "用户有两个孩子"),
    ]


def test_health_diet_plans_projects(engine: ContextEngine) -> None:
    found = learned(
        engine,
        "我有高血压，吃了两年降压药了",
        "我不吃猪肉，过年老被劝",
        "我五月打算去日本玩一周",
        "我在做一个叫“青禾”的记账小程序",
        "你的回答太长了，以后简短一点",
    )
    assert [(c.kind, c.subject, c.content) for c in found] == [
        (MemoryKind.FACT, "health: 高血压", "用户有高血压"),
        (MemoryKind.PREFERENCE, "diet: 猪肉", "用户不吃猪肉"),
        (MemoryKind.EPISODIC, "plan: trip 日本", "用户计划五月去日本"),
        (MemoryKind.PROJECT, "project: 青禾", "用户在做一个叫“青禾”的记账小程序"),
        (MemoryKind.PREFERENCE, "answer style: length", "用户希望回答简短"),
    ]
    assert found[2].data["when"] == "五月"


def test_a_retraction_states_the_retracted_subject(engine: ContextEngine) -> None:
    stated = learned(
        engine, "我吃素", "我有腰椎间盘突出", "我五月打算去日本玩", "我弹钢琴弹了十几年了"
    )
    retracted = learned(
        engine,
        "我现在不吃素了，开始吃鱼了",
        "医生说我的腰椎间盘突出已经完全好了",
        "日本那趟旅行取消了",
        "钢琴我已经不弹了",
    )
    by_subject = {c.subject: c for c in retracted if c.data.get("retracted")}
    assert list(by_subject) == [c.subject for c in stated]
    assert by_subject["diet"].content == "用户不再吃素了"


def test_a_correction_within_a_message_replaces_what_it_corrects(engine: ContextEngine) -> None:
    assert facts(
        engine,
        "我叫陈浩……啊打错了，是陈昊，日天昊",
        "我是护士……不对，准确地说我是急救员，跟车出诊的那种",
    ) == [("name", "用户叫陈昊"), ("occupation", "用户是急救员")]


@pytest.mark.parametrize(
    "text",
    [
        "我朋友是医生，老说我们不懂生活",
        "我室友在腾讯，他说他们也在写",
        "我同事下个月去冰岛看极光，好羡慕",
        "我朋友在做一个叫“拾光”的相册App",
        "你觉得我要不要去考个心理咨询师证？",
        "如果我住在上海就好了",
        "我没有糖尿病",
        "我要去趟超市",
        "医生说我要多休息",
        "我是说这个方案不行",
    ],
)
def test_others_hypotheticals_and_questions_state_nothing(engine: ContextEngine, text: str) -> None:
    assert learned(engine, text) == []
