"""Example statements of each attribute a memory can be about, and of what is not one.

:class:`~agentctx.memory.extract.categories.StatementClassifier` compares a clause's
embedding with these. They were written for the attributes themselves (what any user
says about a job, a city, an allergy), not taken from any data set, and name values
only as examples of their kind. ``none`` holds what people say in the first person
without stating a lasting fact: requests, moods, thanks, plans for the next hour,
other people's facts.
"""

# ruff: noqa: RUF001 - Chinese punctuation on purpose

from __future__ import annotations

PROTOTYPES: dict[str, tuple[str, ...]] = {
    "name": (
        "my name is Anna",
        "I'm called Tom",
        "call me Sam",
        "people call me Bea",
        "I go by Alex",
        "I changed my surname when I married",
    ),
    "occupation": (
        "I work as a nurse",
        "I'm a software developer",
        "my job is teaching",
        "I'm an accountant by profession",
        "I became a paramedic",
        "I drive trucks for a living",
        "I'm a chef",
        "I got a job as an analyst",
        "I'm retired now",
        "I'm a full-time student",
    ),
    "employer": (
        "I work at Google",
        "I work for a small startup",
        "I joined Microsoft last month",
        "my company is Acme",
        "I got hired by a bank",
        "I'm employed at the city hospital",
        "I switched companies to a fintech",
        "I left my employer",
        "I started at Stripe on Monday",
        "I've been at Deloitte for five years",
        "I'm still at the same bank",
    ),
    "residence": (
        "I live in Berlin",
        "I moved to Toronto",
        "I'm based in Seattle",
        "we relocated to Lisbon",
        "my home is in Austin",
        "I just settled in Melbourne",
        "I'm living in a flat in Leeds now",
    ),
    "language": (
        "I speak Spanish",
        "I'm fluent in German",
        "my native language is Polish",
        "I'm learning Japanese",
        "I can speak a bit of Italian",
        "I grew up speaking Cantonese",
        "English is my second language",
    ),
    "skill": (
        "I know Python",
        "I can code in Rust",
        "I'm good at woodworking",
        "I know how to use Excel well",
        "I've been programming in Go for years",
        "I can play the piano",
        "I'm skilled at photography",
        "I'm a decent guitar player",
        "I crochet",
        "I can swim now",
        "I ski pretty well",
    ),
    "family": (
        "my daughter is called Mia",
        "I have two kids",
        "my wife works nights",
        "my husband's name is Leo",
        "my son just turned five",
        "my mom lives with us",
        "I have a younger brother",
        "we just had a baby girl",
        "I'm married",
        "my partner and I have been together for years",
    ),
    "health": (
        "I'm allergic to peanuts",
        "I have asthma",
        "I'm diabetic",
        "I was diagnosed with celiac disease",
        "I have a bad knee",
        "I take medication for blood pressure",
        "I'm lactose intolerant",
        "I broke my ankle",
        "I'm pregnant",
    ),
    "diet": (
        "I'm vegetarian",
        "I don't eat meat",
        "I'm vegan now",
        "I eat gluten free",
        "I keep kosher",
        "I stopped eating pork",
        "I'm on a keto diet",
        "I only eat fish, no other meat",
        "I gave up sugar",
    ),
    "plan": (
        "I'm going to Japan in May",
        "my exam is on June 3rd",
        "we're flying to Paris next month",
        "I'm running a marathon in October",
        "my daughter starts school in September",
        "my wedding is in August",
        "I booked a trip to Iceland",
        "I'm moving house next spring",
        "I registered for a conference in the fall",
        "I signed up for a half marathon in April",
        "I entered the city race next spring",
        "our trip is booked for the summer",
        "I have a job interview next Tuesday",
        "I'm hosting a dinner party next week",
        "my appointment got moved to Friday",
    ),
    "project": (
        "I'm building an app called Apollo",
        "I'm working on a side project",
        "my project is a recipe website",
        "I'm writing a novel",
        "I'm renovating the kitchen",
        "our team is migrating the database",
        "I'm restoring an old motorbike",
        "I started a podcast",
        "I'm writing a bot for my friends",
        "I'm making a game in my spare time",
        "we're redoing the bathroom ourselves",
        "I run a small blog",
    ),
    "preference": (
        "I love jazz",
        "I prefer tea over coffee",
        "I hate cilantro",
        "my favourite colour is green",
        "I like short answers",
        "please answer in bullet points",
        "I really enjoy hiking",
        "I'm a big fan of sci-fi",
        "I'm more of a cat person",
        "I use the metric system",
    ),
    "none": (
        "I need help with my homework",
        "can you explain how this works",
        "I'm tired today",
        "I'm not sure what to do",
        "I think that's a good idea",
        "I want a recipe for dinner",
        "thanks, that helps",
        "I'm looking for a gift",
        "I just read an article about space",
        "I'm so stressed right now",
        "my friend is a plumber",
        "I'll try that",
        "I have a question",
        "I was wondering about the weather",
        "I guess it depends",
        "I'm confused",
        "I got it, thanks",
        "I'm excited about it",
        "I don't know what to get him",
        "I watched a movie last night",
        "I'm up early every day",
        "I can't decide",
        "I cook dinner at home most nights",
        "I drive to work every morning",
        "I'm at the airport right now",
        "I'm in a meeting",
        "I live for summer holidays",
        "I went for a run this morning",
        "I'm working late tonight",
        "I'm on the train",
        "I spent the weekend cleaning",
        "I had pasta for lunch",
        "I ate way too much last night",
        "I'm craving chocolate",
    ),
}
"""Example statements per attribute (``none``: first-person talk that states none)."""

SINGLE_VALUED = frozenset({"name", "occupation", "employer", "residence", "diet"})
"""Attributes a user has one value of at a time: a later statement supersedes."""

ZH_CUES: dict[str, str] = {
    "name": r"我叫|名字|改名|叫我",
    "health": r"过敏|哮喘|糖尿病|高血压|血糖|血压|生病|病了|手术|骨折|失眠|吃药|确诊|怀孕|"
    r"不耐受|受伤|扭伤|康复|查出|检查出|诊断",
    "diet": r"吃素|素食|不吃|戒糖|戒酒|戒肉|生酮|断食|节食|忌口|清真|不喝|吃荤|饮食|减脂|减肥|控糖|"
    r"碳水|低卡|低脂",
    "language": r"[\u4e00-\u9fff]{1,4}(?:语|话)|母语|外语|中文|英文",
    "family": r"我(?:的)?(?:哥|姐|弟|妹|爸|妈)|女儿|儿子|孩子|小孩|宝宝|老公|老婆|丈夫|妻子|"
    r"爱人|对象|男朋友|女朋友|爸爸|妈妈|父亲|母亲|爸妈|父母|哥哥|姐姐|弟弟|妹妹|爷爷|奶奶|外公|外婆|公公|婆婆|岳父|岳母|结婚|"
    r"离婚|分手|订婚",
    "plan": r"打算|计划|准备去|要去|报名|报了|预订|订了|定在|改到|改期|推迟|延期|提前|下个?月|明年|"
    r"下周|[一二三四五六七八九十\d]+月|考试|旅行|旅游|婚礼",
    "project": r"项目|在做|在写|在开发|在搞|副业|小程序|网站|[Aa]pp|开源|创业|运营|毕业设计|毕设|"
    r"论文|公众号|博客|频道|网店|装修",
    "employer": r"公司|单位|跳槽|入职|辞职|离职|上班|报到|任职|实习|在.{2,8}(?:做|当|干)",
    "occupation": r"职业|工作是|是一名|当了|当上|转行|改行|换工作|做.{1,6}工作|干.{1,4}这行|"
    r"(?:是|当|做)[^，。]{0,6}(?:员|师|生|家|工|手|官|长|者|警|医|经理|老板|主管|护士|会计|"
    r"司机|销售)$|"
    # "我是做保险的", "我跑外卖的", "我开出租的": what one does for a living
    r"^我(?:是)?(?:一个)?(?:做|跑|开|卖|送|搞|教|干|修)[^，。的]{1,6}的$",
    "residence": r"住(?!院|宿)|搬到|搬去|搬家|搬过来|定居|家在|老家|落户|调到|新家|"
    r"在[^，。]{2,6}(?:待|呆|生活)了",
    "skill": r"会用|会写|会弹|会画|会做|会编|擅长|熟悉|精通|学会|懂|会开车|弹|练|在学|改学|拉琴|"
    # "用得挺溜", "这块我熟", and a practice with its duration: "滑双板滑了三年"
    r"[用玩做画写]得(?:挺|很|还|特别|比较)?(?:溜|熟|好|顺)|我熟|"
    r"([\u4e00-\u9fff])[^，。]{1,4}\1了[一二三四五六七八九十两几\d]+(?:个)?(?:年|个月)",
    "preference": r"喜欢|爱吃|爱喝|爱看|爱听|讨厌|受不了|偏好|更爱|最爱|回答|回复|简短|详细|列表",
}
"""Chinese: the words each attribute is stated with, in the order a clause is read
(the first that matches names its attribute). The local embedding model is English;
Chinese clauses are classified by these instead."""
