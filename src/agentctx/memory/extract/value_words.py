"""Closed word lists the fact rules recognize values by (languages, programming languages
and tools, instruments, health conditions, diets, family relations), in English and
Chinese.

A list keeps a rule precise where the sentence alone is ambiguous: "I know Rust" is a
skill, "I know Tom" is not; "I speak French" names a language, "I speak my mind" does
not; 我会说法语 is a language, 我会说话 is not.
"""

from __future__ import annotations

from agentctx.memory.extract.statements import words

LANGUAGES = words(
    """
    english french spanish german italian portuguese japanese chinese mandarin cantonese
    korean russian arabic hindi urdu bengali punjabi tamil telugu marathi gujarati dutch
    swedish norwegian danish finnish icelandic polish czech slovak hungarian romanian
    bulgarian serbian croatian slovenian ukrainian greek turkish hebrew persian farsi
    vietnamese thai indonesian malay tagalog filipino swahili catalan basque galician
    irish welsh latin esperanto lithuanian latvian estonian albanian armenian georgian
    amharic yoruba zulu afrikaans nepali sinhala khmer lao burmese mongolian kazakh
    uzbek
    """
)
"""Natural languages (lowercase)."""

# Programming languages and tools, matched whatever their case...
TECH = words(
    """
    python java javascript typescript kotlin scala haskell elixir erlang clojure ocaml
    fortran cobol perl php lua matlab sql nosql bash powershell html css sass react vue
    angular svelte django flask fastapi rails laravel spring kubernetes docker terraform
    ansible aws azure gcp linux unix excel photoshop gimp illustrator figma sketch
    blender autocad solidworks tensorflow pytorch pandas numpy git latex tableau
    powerbi salesforce sap jira wordpress unity unreal godot nodejs node.js golang c++
    c# f# objective-c assembly graphql postgres postgresql mysql mongodb redis kafka
    spark hadoop snowflake dbt airflow jenkins nginx premiere lightroom indesign
    """
)
# ...and those that are everyday words in lowercase, matched only as written here.
TECH_AS_WRITTEN = frozenset(
    {"Go", "C", "R", "Rust", "Swift", "Ruby", "Dart", "Julia", "Zig", "Nim"}
)

INSTRUMENTS = words(
    """
    piano guitar violin viola cello bass drums ukulele flute saxophone sax trumpet
    trombone clarinet oboe bassoon harp harmonica accordion keyboard banjo mandolin
    organ synth synthesizer
    """
)

CONDITIONS = (
    r"(?:type [12] |type (?:one|two) )?diabetes|asthma|cluster headaches|headaches|"
    r"(?:a )?(?:broken|fractured|sprained|torn|dislocated) (?:wrist|arm|leg|ankle|foot|hand|"
    r"finger|thumb|toe|rib|collarbone|knee|shoulder|elbow|hip|nose|acl|meniscus)|"
    r"high blood pressure|hypertension|"
    r"celiac(?: disease)?|coeliac(?: disease)?|ibs|crohn'?s(?: disease)?|colitis|migraines?|"
    r"eczema|psoriasis|arthritis|adhd|autism|anxiety|depression|epilepsy|insomnia|"
    r"sleep apnea|gout|hypothyroidism|hyperthyroidism|pcos|endometriosis|tinnitus|"
    r"scoliosis|sciatica|long covid|chronic (?:back )?pain|a (?:herniated|slipped|bulging) "
    r"disc|high cholesterol|anemia|lupus|fibromyalgia|ms|multiple sclerosis|"
    r"a bad back|a heart condition|glaucoma|dyslexia|ptsd|ocd|bipolar(?: disorder)?"
)
"""Health conditions a user states having (lowercase alternatives)."""

CONDITION_ADJECTIVES = {
    "diabetic": "diabetes",
    "prediabetic": "prediabetes",
    "asthmatic": "asthma",
    "epileptic": "epilepsy",
    "anemic": "anemia",
    "anaemic": "anemia",
    "celiac": "celiac disease",
    "coeliac": "celiac disease",
}

FOODS = words(
    """
    pork beef meat chicken fish seafood shellfish dairy milk cheese eggs egg gluten wheat
    sugar carbs nuts peanuts soy alcohol lamb bread mushrooms onions garlic caffeine
    coffee shrimp prawns lactose
    """
) | {"red meat", "spicy food", "fried food", "processed food", "junk food"}
"""Foods a diet avoids ("I avoid X" names a diet only for these)."""

DIET_REGIMES = words("vegetarian vegan pescatarian pescetarian keto paleo carnivore")
"""Overall diets: one at a time (subject ``diet``)."""

ROMANTIC = words("wife husband boyfriend girlfriend partner fiance fiancee fiancé fiancée spouse")
RELATIONS = {
    **{word: word for word in ("daughter", "son", "brother", "sister", "twin", "baby")},
    **{word: "partner" for word in ROMANTIC},
    "mom": "mother",
    "mum": "mother",
    "mother": "mother",
    "mama": "mother",
    "dad": "father",
    "father": "father",
    "papa": "father",
    "grandma": "grandmother",
    "grandmother": "grandmother",
    "granny": "grandmother",
    "grandpa": "grandfather",
    "grandfather": "grandfather",
    "stepson": "stepson",
    "stepdaughter": "stepdaughter",
    "niece": "niece",
    "nephew": "nephew",
    "aunt": "aunt",
    "uncle": "uncle",
    "cousin": "cousin",
    "kid": "child",
    "child": "child",
    "boy": "son",
    "girl": "daughter",
    "grandson": "grandson",
    "granddaughter": "granddaughter",
    "stepmother": "stepmother",
    "stepmom": "stepmother",
    "stepfather": "stepfather",
    "stepdad": "stepfather",
    "stepbrother": "stepbrother",
    "stepsister": "stepsister",
    "half-brother": "brother",
    "half-sister": "sister",
    "godson": "godson",
    "goddaughter": "goddaughter",
    **{
        f"{relation}-in-law": f"{relation}-in-law"
        for relation in ("mother", "father", "sister", "brother", "son", "daughter")
    },
}
"""Family words as written -> the relation a subject names (``family: partner: samir``):
partners of any kind are one relation, so a breakup retracts whichever word was used."""

RELATION_PATTERN = "|".join(sorted(RELATIONS, key=len, reverse=True))

PEOPLE = words(
    """
    friend friends buddy pal mate bestie roommate flatmate housemate neighbor neighbour
    colleague coworker co-worker boss manager teammate classmate landlord landlady
    parents kids children siblings
    """
) | frozenset(RELATIONS)
"""Words for other people: what "my X is …" says about them is not about the user."""

# Chinese ------------------------------------------------------------------------------------

ZH_LANGUAGES = (
    "英语|英文|中文|汉语|普通话|国语|粤语|广东话|闽南语|上海话|四川话|客家话|日语|日文|韩语|"
    "韩文|法语|德语|西班牙语|意大利语|俄语|葡萄牙语|阿拉伯语|泰语|越南语|印尼语|马来语|荷兰语|"
    "瑞典语|希腊语|土耳其语|印地语|波兰语|拉丁语|世界语"
)
ZH_INSTRUMENTS = (
    "钢琴|电子琴|吉他|电吉他|小提琴|中提琴|大提琴|贝斯|二胡|古筝|古琴|琵琶|笛子|竹笛|长笛|"
    "萨克斯|单簧管|小号|长号|圆号|手风琴|口琴|竖琴|架子鼓|尤克里里|扬琴|葫芦丝|唢呐"
)
ZH_INSTRUMENT_VERBS = {"弹", "拉", "吹", "打"}
ZH_RELATIONS = {
    "女儿": "daughter",
    "闺女": "daughter",
    "儿子": "son",
    "老婆": "partner",
    "妻子": "partner",
    "太太": "partner",
    "爱人": "partner",
    "老公": "partner",
    "丈夫": "partner",
    "先生": "partner",
    "男朋友": "partner",
    "对象": "partner",
    "女朋友": "partner",
    "男友": "partner",
    "女友": "partner",
    "未婚夫": "partner",
    "未婚妻": "partner",
    "哥哥": "brother",
    "哥": "brother",
    "弟弟": "brother",
    "姐姐": "sister",
    "姐": "sister",
    "妹妹": "sister",
    "妈妈": "mother",
    "妈": "mother",
    "母亲": "mother",
    "爸爸": "father",
    "爸": "father",
    "父亲": "father",
    "爷爷": "grandfather",
    "奶奶": "grandmother",
    "外公": "grandfather",
    "外婆": "grandmother",
    "孩子": "child",
}
ZH_RELATION_PATTERN = "|".join(sorted(ZH_RELATIONS, key=len, reverse=True))
ZH_CONDITIONS = (
    "高血压|低血压|糖尿病|哮喘|腰椎间盘突出|颈椎病|胃炎|胃病|贫血|抑郁症|焦虑症|失眠|偏头痛|"
    "鼻炎|湿疹|痛风|甲亢|甲减|乳糖不耐受|心脏病|高血脂|脂肪肝|关节炎|荨麻疹|癫痫|痔疮|"
    "颈椎|腰肌劳损|近视|青光眼|抑郁|焦虑"
)
ZH_DIET_REGIMES = "吃素|素食|纯素|生酮|轻断食|断食|低碳水|低碳|地中海饮食"
ZH_TIME = (
    r"(?:今年|明年|后年|下周[一二三四五六日天]?|下个?星期[一二三四五六日天]?|下个?月|月底|年底|"
    r"年初|年后|节后|[一二三四五六七八九十]{1,2}月(?:份|初|中|底)?(?:[一二三四五六七八九十\d]{1,3}[号日])?|"
    r"\d{1,2}月(?:份|初|中|底)?(?:\d{1,2}[号日])?|国庆|春节|五一|十一|暑假|寒假|周末|这周末|"
    r"明天|后天|下半年|上半年|过年|圣诞)"
)
