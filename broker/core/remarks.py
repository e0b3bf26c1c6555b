"""Remark texts the broker and name server share with Apache RocketMQ 4.9.8 (the parity corpus compares them).

`suggest_todo(text)` is 4.9.8's `FAQUrl.suggestTodo`: the text followed by the FAQ line, as its refusals read.
"""

from __future__ import annotations

FAQ_SUFFIX = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
#: what a 4.9.8 response carries when its processor set a code but left the default remark (createResponseCommand)
NOT_SET_ANY_RESPONSE_CODE = "not set any response code"


def suggest_todo(text: str) -> str:
    return text + FAQ_SUFFIX
