"""The words people ask about a memory's subject with, indexed alongside its text.

A memory says "User works as a pilot in Oslo"; its user asks "what is my job?" or
"我是做什么工作的?". Neither the words nor (for a small embedding model) the meaning
overlap enough to find it. A memory with a subject (``occupation``, ``allergy:
peanuts``, ``family: daughter: chloe``) is indexed with the words of questions about
that subject, in English and Chinese, so the lexical ranking finds it and the embedding
of its document sits nearer such questions.

The lists are about the subjects (what a job, a home or an allergy is asked with), not
about any data set: they name the attribute, never a value.
"""

from __future__ import annotations

SUBJECT_WORDS: dict[str, str] = {
    "name": "name called named 名字 叫",
    "age": "age old years 年龄 岁",
    "birth date": "birthday born 生日 出生",
    "occupation": "job work occupation profession career living do 工作 职业 做什么",
    "employer": "work employer company job workplace 公司 单位 工作",
    "field of work": "work field industry 行业 工作",
    "residence": "live living home city where based 住 住在 城市 哪里 家",
    "home town": "from origin hometown grew born 来自 老家 家乡 哪里人",
    "school": "school study university college 学校 大学 读书",
    "major": "major study subject degree 专业 学",
    "language": "language languages speak 语言 说 会",
    "skill": "skill skills know can programming 会 技能",
    "experience": "experience years practice 经验 多久",
    "family": "family 家人 家里",
    "allergy": "allergy allergic allergies 过敏",
    "health": "health condition medical 健康 身体 病",
    "diet": "diet eat eating food 饮食 吃",
    "plan": "plan plans planning upcoming trip 计划 打算",
    "project": "project working building 项目 在做",
    "preference": "like likes prefer favourite favorite 喜欢 爱",
    "favourite": "favourite favorite like best 最喜欢",
    "answer style": "answers answer responses reply style 回答 回复",
}
"""Question words per subject head (the part of a subject before its first ``:``, or
its first words)."""

RELATION_WORDS: dict[str, str] = {
    "daughter": "daughter child kid children 女儿 孩子",
    "son": "son child kid children 儿子 孩子",
    "kid": "kid child children 孩子",
    "child": "child kid children 孩子",
    "wife": "wife spouse partner married 妻子 老婆 爱人",
    "husband": "husband spouse partner married 丈夫 老公 爱人",
    "partner": "partner spouse 伴侣 对象",
    "boyfriend": "boyfriend partner 男朋友",
    "girlfriend": "girlfriend partner 女朋友",
    "mother": "mother mom mum parent 妈妈 母亲",
    "father": "father dad parent 爸爸 父亲",
    "brother": "brother sibling 哥哥 弟弟 兄弟",
    "sister": "sister sibling 姐姐 妹妹 姐妹",
}
"""Question words of a family member's relation (``family: daughter: chloe``)."""


def subject_words(subject: str | None) -> str:
    """The question words indexed with a memory of ``subject`` ('' for none)."""
    if not subject:
        return ""
    parts = [p.strip() for p in subject.lower().split(":")]
    head = parts[0]
    found = SUBJECT_WORDS.get(head)
    if found is None:
        found = next((w for key, w in SUBJECT_WORDS.items() if head.startswith(key)), "")
    extra = [RELATION_WORDS.get(part, "") for part in parts[1:]] if head == "family" else []
    return " ".join(w for w in (found, *extra) if w)


__all__ = ["RELATION_WORDS", "SUBJECT_WORDS", "subject_words"]
