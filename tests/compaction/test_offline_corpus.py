"""Conversations shared by the offline compaction tests: multi-topic chats, EN and ZH.

Data only (no tests): a conftest.py here would shadow the suite's root conftest module.
"""
# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

# A user plans a trip to Lisbon (0-7), then debugs a PostgreSQL outage (8-15), then
# asks about a mushroom risotto (16-23).
THREE_TOPICS = (
    "I'm planning a trip to Lisbon with my sister in early May. We have about five days and "
    "a budget of roughly 1,500 euros each, flights included. Where should we start?",
    "Start with the flights, since their prices move the most. From Berlin, TAP and easyJet "
    "both fly direct to Lisbon; fares for May 3 are currently between 90 and 160 euros one "
    "way. After that, pick a neighbourhood for the hotel: Alfama is charming but hilly, "
    "Baixa is central and flat.",
    "Baixa sounds better because my sister has a bad knee. Can you compare a couple of "
    "hotels there for four nights?",
    "Hotel Avenida Palace costs about 210 euros a night and is next to Rossio station. The "
    "Lumiares in Bairro Alto is 180 euros a night with a kitchen. A cheaper option is Browns "
    "Downtown at 130 euros a night, two minutes from the Baixa-Chiado metro.",
    "Let's go with Browns Downtown. We decided to book the 7:45 flight to Lisbon on May 3 "
    "and fly back on May 8. What should we plan for day trips?",
    "Sintra is the classic day trip from Lisbon: take the train from Rossio station, about "
    "40 minutes, and buy the Pena Palace tickets online because the queues are long in May. "
    "Cascais is a good beach afternoon by train from Cais do Sodré.",
    "Haha, great. Is the Lisboa Card worth it for the trains and the museums?",
    "For five days, yes: the 72-hour Lisboa Card costs 45 euros and covers the Sintra and "
    "Cascais trains, the trams, and entry to the Jerónimos Monastery and Belém Tower.",
    "Switching gears: our API started returning 500 errors last night. The logs say "
    "'remaining connection slots are reserved for non-replication superuser connections'. "
    "Any idea?",
    "That message comes from PostgreSQL when max_connections is exhausted. Check how many "
    "connections each service opens: group pg_stat_activity by application_name to see "
    "which service holds the connection slots.",
    "The worker service holds 180 connections, and max_connections is 200. The workers use "
    "SQLAlchemy with a pool_size of 20 and we run nine worker replicas.",
    "Nine replicas times a pool of 20 is 180 connections, before max_overflow. Lower the "
    "pool_size to 5 per worker, or put PgBouncer in transaction mode in front of PostgreSQL "
    "so hundreds of clients share a few server connections.",
    "We decided to deploy PgBouncer with a default_pool_size of 40 and cut the SQLAlchemy "
    "pool to 5. Should we also set a statement timeout on the database?",
    "Yes, set statement_timeout to 30 seconds for the worker role, so a stuck query releases "
    "its connection. Also enable pool_pre_ping in SQLAlchemy, because PgBouncer closes idle "
    "server connections.",
    "Done. The error rate dropped to zero after the deploy, and PostgreSQL now shows 46 "
    "active connections.",
    "Good result. Keep an alert on pg_stat_activity counts above 150 connections so you hear "
    "about it before the connection slots run out again.",
    "Totally different question: I want to cook a mushroom risotto for six people on "
    "Saturday. How much rice do I need?",
    "Plan on about 80 grams of arborio rice per person, so 480 grams for six. You'll need "
    "roughly 1.8 litres of hot stock, 500 grams of mixed mushrooms, an onion, a glass of dry "
    "white wine, butter and parmesan.",
    "Should I cook the mushrooms with the rice or separately?",
    "Sauté the mushrooms separately in a hot pan with butter and thyme until they are "
    "browned, then fold half of them into the risotto at the end and keep the rest for the "
    "top. Cooking mushrooms with the rice makes them soggy.",
    "How do I keep the risotto creamy without cream?",
    "Toast the rice in the onion butter for two minutes, add the wine, then the hot stock one "
    "ladle at a time while stirring. After about 18 minutes, take the risotto off the heat "
    "and beat in cold butter and grated parmesan: that mantecatura makes it creamy.",
    "Perfect, thanks! I'll use porcini stock for the risotto and serve it with a green salad.",
    "Porcini stock will deepen the mushroom flavour of the risotto. Season with salt only at "
    "the end, since the parmesan and the stock are already salty.",
)
THREE_TOPICS_SWITCHES = (8, 16)

# One topic throughout: a slow PostgreSQL query, from the symptom to the fix.
ONE_TOPIC = (
    "Our orders page takes eight seconds to load since Monday. The slow part is the query "
    "that lists a customer's orders with their items.",
    "Run EXPLAIN ANALYZE on that query in PostgreSQL and paste the plan. Look for a "
    "sequential scan on a large table or a nested loop with many rows.",
    "The plan shows a sequential scan on order_items, 4.2 million rows, and the join on "
    "order_id takes 7.6 seconds of the total.",
    "A sequential scan on order_items for a join on order_id means there is no index on "
    "order_items.order_id. PostgreSQL does not index foreign keys by itself.",
    "Right, we only have the primary key on order_items. Can we add the index without "
    "locking the table during business hours?",
    "Use CREATE INDEX CONCURRENTLY on order_items (order_id). It does not block writes to "
    "the table, though it takes longer and cannot run inside a transaction.",
    "The index build finished in four minutes. The query plan now uses an index scan on "
    "order_items and the query takes 35 milliseconds.",
    "Good. Run ANALYZE on order_items so the planner statistics are fresh, and check the "
    "other foreign keys of the orders schema for missing indexes.",
    "We found two more foreign keys without an index: payments.order_id and "
    "shipments.order_id. Should we index both the same way?",
    "Yes, index both concurrently. Shipments is small, but payments has a million rows and "
    "the refund query joins it on order_id.",
    "Both indexes are built. The orders page now loads in 300 milliseconds, and the refund "
    "query dropped from two seconds to 40 milliseconds.",
    "To catch this earlier, enable pg_stat_statements and alert when a query's mean time "
    "goes above 500 milliseconds on the orders database.",
    "We decided to add a CI check that fails a migration adding a foreign key without an "
    "index on the referencing column.",
    "That check prevents the problem at the source. Include partitioned tables in it, since "
    "each partition of orders needs its own index on order_id.",
    "Makes sense, we will cover partitions too. Is there anything else in the plan we "
    "should watch for?",
    "Watch the row estimates in EXPLAIN ANALYZE: when the planner's estimate of the rows is "
    "far from the actual rows, the statistics on that orders table are stale.",
)

# A trip to Chengdu (0-5), a MySQL deadlock (6-11), braised pork (12-17).
ZH_TOPICS = (
    "我们打算五一假期去成都玩四天，两个人预算大概六千元，机票已经订好了。你能帮我安排一下成都的行程吗？",
    "第一天可以去宽窄巷子和人民公园喝茶，晚上在春熙路吃火锅。第二天早上去成都大熊猫繁育研究基地，"
    "熊猫上午最活跃，建议八点前到熊猫基地。",
    "熊猫基地门票多少钱？五一期间需要提前预约吗？",
    "熊猫基地门票五十五元，五一期间必须提前在官方小程序预约，名额很紧张，最好提前一周预约。",
    "第三天我们想去都江堰和青城山，一天来得及吗？我们决定把成都的酒店订在春熙路附近。",
    "来得及。从犀浦站坐动车到青城山大约四十分钟，上午爬青城山，下午去都江堰景区，晚上回成都春熙路的酒店。",
    "换个话题，我们线上的MySQL数据库最近频繁出现死锁，订单服务报错 "
    "Deadlock found when trying to get lock。",
    "先执行 SHOW ENGINE INNODB STATUS 查看最近一次死锁的详细信息，"
    "重点看两个事务分别持有和等待的锁，以及对应的SQL语句。",
    "日志显示两个事务都在更新订单表和库存表，但是更新顺序相反，一个事务先更新订单表，另一个事务先更新库存表。",
    "这是典型的加锁顺序不一致导致的死锁。解决办法是让所有事务按照相同的顺序更新表，比如统一先更新库存表再更新订单表，"
    "同时给更新条件加上索引，减少事务锁定的行数。",
    "我们决定统一加锁顺序，并且给库存表的商品编号字段加索引。上线以后死锁从每天两百次降到了零。",
    "很好。建议再把大事务拆小，并在应用层对死锁错误做一次自动重试，重试间隔设为一百毫秒。",
    "周末想给家里人做红烧肉，五花肉要买多少？",
    "四口人买一斤半五花肉就够了，大约七百五十克。做红烧肉还需要冰糖、生抽、老抽、料酒、葱姜和八角。",
    "红烧肉怎么炒糖色才不会苦？",
    "冷锅放少量油和冰糖，小火慢慢熬，等冰糖化开变成枣红色、冒小泡的时候马上下五花肉翻炒，火大了糖色就会发苦。",
    "红烧肉炖多长时间比较好？",
    "加开水没过五花肉，小火炖一个小时左右，最后大火收汁，让红烧肉的汤汁裹住每一块五花肉。",
)
ZH_TOPICS_SWITCHES = (6, 12)
