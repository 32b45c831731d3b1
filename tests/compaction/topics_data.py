"""Realistic two-topic conversations for the topic archiving tests (English and Chinese)."""

# ruff: noqa: RUF001, E501 - Chinese text uses full-width punctuation; messages are long lines

from __future__ import annotations

# A user plans a trip to Lisbon (30 messages), then debugs a database connection pool
# (30 messages). The first message introduces the user.
TRIP = [
    (
        "user",
        "Hi, my name is Maya Chen and I work as a data engineer. I want to plan a trip to Lisbon in May.",
    ),
    (
        "assistant",
        "Happy to help plan Lisbon in May. How many days, and do you prefer flights in the morning?",
    ),
    (
        "user",
        "Five days. Morning flights from Berlin are best, and the budget for flights is 300 euros.",
    ),
    (
        "assistant",
        "Direct flights from Berlin to Lisbon in May start around 180 euros with TAP and easyJet.",
    ),
    ("user", "Book the TAP flight on May 12 leaving at 7:40 if the fare is still below 200 euros."),
    ("assistant", "The TAP flight on May 12 at 7:40 costs 189 euros including a cabin bag."),
    ("user", "Great. Now the hotel: something in Alfama or Baixa, walking distance to the tram."),
    (
        "assistant",
        "In Alfama the Memmo hotel has river views; in Baixa the Lisboa Pessoa hotel is near tram 28.",
    ),
    ("user", "Which hotel is quieter at night? I sleep badly with street noise."),
    (
        "assistant",
        "Memmo Alfama is quieter: it sits on a small lane away from the tram and the bars.",
    ),
    ("user", "Reserve Memmo Alfama for four nights from May 12 to May 16, room with a river view."),
    (
        "assistant",
        "Memmo Alfama, four nights, river view room: 145 euros per night, breakfast included.",
    ),
    ("user", "What should the itinerary look like? I like museums, viewpoints and seafood."),
    (
        "assistant",
        "Day one: Alfama walk, the Miradouro de Santa Luzia viewpoint, and fado in the evening.",
    ),
    ("user", "Add the tile museum and Belem on one of the days, and the Gulbenkian museum."),
    (
        "assistant",
        "Day two: Belem tower, Jeronimos monastery, pasteis de Belem. Day three: tile museum and Gulbenkian.",
    ),
    ("user", "Is a day trip to Sintra worth it with only five days in Lisbon?"),
    (
        "assistant",
        "Yes: Sintra is 40 minutes by train from Rossio; Pena palace and Quinta da Regaleira fill a day.",
    ),
    ("user", "Put Sintra on day four and keep day five free for shopping and the LX Factory."),
    (
        "assistant",
        "Day four: Sintra by train. Day five: LX Factory, Time Out market and the Lisbon riverside.",
    ),
    ("user", "Which seafood restaurants near Alfama would you recommend for dinner?"),
    ("assistant", "Try Ramiro for prawns and clams, and Taberna da Rua das Flores for petiscos."),
    ("user", "Ramiro usually has a queue. Can I reserve a table there for May 13?"),
    (
        "assistant",
        "Ramiro takes no reservations; arrive before 7 pm or after 10 pm to avoid the queue.",
    ),
    ("user", "Fine. How do I get from Lisbon airport to Alfama with luggage?"),
    (
        "assistant",
        "A taxi or Uber from the airport to Alfama takes 20 minutes and costs about 15 euros.",
    ),
    ("user", "Should I buy a Lisboa card for trams, trains to Sintra and museum entries?"),
    (
        "assistant",
        "The 72 hour Lisboa card covers trams, the Sintra train and the tile museum: it pays off.",
    ),
    ("user", "Good. Please summarize the flight, hotel and itinerary in one list for my trip."),
    (
        "assistant",
        "TAP May 12 7:40, Memmo Alfama May 12 to 16, days: Alfama, Belem, museums, Sintra, LX Factory.",
    ),
]

POOL = [
    (
        "user",
        "Different question: our Python service throws 'QueuePool limit of size 5 overflow 10 reached' under load.",
    ),
    (
        "assistant",
        "That SQLAlchemy error means every pooled connection is checked out; requests wait for the pool timeout.",
    ),
    ("user", "We run 8 gunicorn workers with 4 threads each against one PostgreSQL database."),
    (
        "assistant",
        "That is 32 threads sharing pools of 15 connections per worker; PostgreSQL max_connections matters too.",
    ),
    ("user", "PostgreSQL max_connections is 100. Should I raise pool_size to 20 per worker?"),
    (
        "assistant",
        "8 workers times 30 connections would exceed max_connections; use pgbouncer or lower pool_size.",
    ),
    ("user", "Could connections be leaking? Some handlers open a session and never close it."),
    (
        "assistant",
        "Yes: a session not closed keeps its connection checked out until garbage collection.",
    ),
    (
        "user",
        "How do I find the leaking handler? The pool status only shows checked out connections.",
    ),
    (
        "assistant",
        "Enable pool logging with echo_pool='debug' and record a stack trace on every checkout event.",
    ),
    (
        "user",
        "The checkout traces point at the report export handler, it never closes the session.",
    ),
    (
        "assistant",
        "Wrap the export handler session in a context manager so the connection returns to the pool.",
    ),
    (
        "user",
        "Fixed the export handler. The QueuePool error is gone, but p95 latency is still 900 ms.",
    ),
    (
        "assistant",
        "Check pg_stat_activity for idle in transaction connections and slow queries holding locks.",
    ),
    ("user", "pg_stat_activity shows ten connections idle in transaction for minutes."),
    (
        "assistant",
        "Set idle_in_transaction_session_timeout in PostgreSQL and commit transactions before slow work.",
    ),
    ("user", "Should pool_pre_ping be on? We see stale connection errors after database failover."),
    (
        "assistant",
        "Yes, pool_pre_ping checks each connection on checkout and replaces stale ones after failover.",
    ),
    ("user", "And pool_recycle? The load balancer drops idle TCP connections after 300 seconds."),
    (
        "assistant",
        "Set pool_recycle to 280 seconds so connections are replaced before the balancer drops them.",
    ),
    ("user", "Is pgbouncer in transaction mode safe with SQLAlchemy prepared statements?"),
    (
        "assistant",
        "With psycopg 3 disable prepared statements or use pgbouncer 1.21 which supports them.",
    ),
    (
        "user",
        "We will deploy pgbouncer with a pool of 40 server connections for all gunicorn workers.",
    ),
    (
        "assistant",
        "Then set the SQLAlchemy pool_size to 5 per worker; pgbouncer multiplexes the PostgreSQL connections.",
    ),
    (
        "user",
        "After pgbouncer the p95 latency dropped to 180 ms and the QueuePool errors are gone.",
    ),
    (
        "assistant",
        "Good. Keep pool logging on in staging and alert when checked out connections reach the limit.",
    ),
    ("user", "Which metrics should the dashboard show for the connection pool?"),
    (
        "assistant",
        "Checked out connections, overflow, checkout wait time, pgbouncer waiting clients and query latency.",
    ),
    ("user", "Thanks, write that into the runbook for the database connection pool."),
    (
        "assistant",
        "Runbook: pool_size 5, pre_ping on, recycle 280 s, pgbouncer 40 connections, alerts on pool waits.",
    ),
]

# The design's own example: React performance (20 messages), then a login scheme (20).
REACT_ZH = [
    ("user", "你好，我叫李雷，我是一名前端开发者。我们的React页面列表渲染很慢。"),
    ("assistant", "列表渲染慢通常是因为组件重复渲染。你的列表有多少条数据？"),
    ("user", "大概两千条数据，每条都是一个React组件，滚动的时候很卡。"),
    ("assistant", "两千条数据建议使用虚拟列表，比如react-window，只渲染可见区域的组件。"),
    ("user", "虚拟列表之外，useMemo和useCallback应该怎么用？"),
    ("assistant", "useMemo缓存计算结果，useCallback缓存回调函数，避免子组件因为新引用而重复渲染。"),
    ("user", "子组件需要用React.memo包起来吗？"),
    ("assistant", "是的，React.memo配合useCallback，子组件在属性不变时不会重复渲染。"),
    ("user", "我用React Profiler看到排序函数每次渲染都执行。"),
    ("assistant", "把排序函数的结果用useMemo缓存，依赖数组只放列表数据和排序字段。"),
    ("user", "useMemo的依赖数组写错会怎样？"),
    ("assistant", "依赖数组漏写会拿到旧数据，多写会让缓存失效，可以开启eslint的hooks规则检查。"),
    ("user", "上下文Context变化也会导致整个列表重复渲染吗？"),
    ("assistant", "会的，Context的值变化会让所有消费组件重新渲染，可以拆分Context或者用选择器。"),
    ("user", "我把Context拆成了两个，渲染次数明显减少了。"),
    ("assistant", "很好。再检查列表项的key，不要用数组下标作为key，否则排序后组件会重复渲染。"),
    ("user", "key改成了数据的id，滚动现在流畅多了。"),
    ("assistant", "可以用React Profiler再测一次，对比优化前后的渲染耗时。"),
    ("user", "Profiler显示渲染耗时从三百毫秒降到了四十毫秒。"),
    ("assistant", "性能优化效果很明显：虚拟列表、useMemo、React.memo和稳定的key一起起作用。"),
]

LOGIN_ZH = [
    ("user", "另一个问题：用户登录方案应该用JWT还是Session？"),
    ("assistant", "JWT是无状态令牌，适合多个服务；Session把登录状态存在服务端，更容易注销。"),
    ("user", "我们有移动端和网页端，后端是三个微服务。"),
    ("assistant", "多个微服务和移动端更适合JWT，网关统一校验令牌签名。"),
    ("user", "JWT令牌被盗用怎么办？注销以后令牌还有效。"),
    ("assistant", "令牌有效期设短一些，比如十五分钟，再配合刷新令牌和黑名单。"),
    ("user", "刷新令牌应该存在哪里？localStorage安全吗？"),
    ("assistant", "刷新令牌放在HttpOnly的Cookie里，localStorage容易被跨站脚本读取。"),
    ("user", "Cookie需要设置SameSite吗？"),
    ("assistant", "需要，SameSite设为Strict或Lax，防止跨站请求伪造，同时开启Secure。"),
    ("user", "登录接口要不要加验证码和登录失败次数限制？"),
    ("assistant", "要，连续登录失败五次就锁定账号十分钟，并要求图形验证码。"),
    ("user", "密码应该怎么存储？现在用的是MD5。"),
    ("assistant", "MD5不安全，密码要用bcrypt或者argon2加盐哈希存储。"),
    ("user", "JWT的签名算法用HS256还是RS256？"),
    ("assistant", "多个微服务建议RS256：认证服务用私钥签名，其他服务用公钥校验令牌。"),
    ("user", "刷新令牌轮换是什么意思？"),
    ("assistant", "每次用刷新令牌换新的访问令牌时，同时签发新的刷新令牌，旧的立即作废。"),
    ("user", "好的，登录方案就用JWT加刷新令牌轮换，密码改成argon2。"),
    (
        "assistant",
        "总结：JWT访问令牌十五分钟，HttpOnly Cookie存刷新令牌，RS256签名，argon2存密码。",
    ),
]
