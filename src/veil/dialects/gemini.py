"""Google Gemini ``generateContent`` (``POST …/models/{model}:generateContent``, and
``:streamGenerateContent?alt=sse``, under ``/v1beta`` or ``/v1``): Gemini CLI's API.

A body is ``{"contents": [...], "systemInstruction", "tools", "generationConfig", ...}``; the
model is named in the path, not the body. A content is ``{"role": "user" | "model", "parts"}``;
a part holds ``text`` (``thought: true`` with a ``thoughtSignature`` for a thought),
``functionCall`` (``name``, ``args``, ``id`` when the API gave one) or ``functionResponse``
(``name``, ``response``: an object, ``id`` when the client sends one — Gemini CLI does, its own
call id, while the call in the model's turn has none). A call and its result are paired by
``id`` when either side has one, else by name and order between the model's turn and the user
turn after it: the id is then ``NAME#T.N`` (``T`` the model turn's index, ``N`` the count of
that name's calls before it in the turn), the same on both sides; a call's input (``args``) is
found in the raw body next to its own id, else after its tool's name (:func:`call_inputs_in`).
Tools are
``{"functionDeclarations": [{"name", ...}]}``. No session in the body or headers: the proxy
keys a conversation by its first message. Implicit caching (any shared prefix). Usage is
``usageMetadata`` (``promptTokenCount`` includes ``cachedContentTokenCount``), in the JSON
answer and in each SSE chunk. Errors are ``{"error": {"code", "message", "status"}}``. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast
from urllib.parse import unquote

from veil.dialects.base import (
    CACHE_TTL_S,
    EMPTY,
    JSON,
    Dialect,
    InputAt,
    Message,
    Piece,
    ResultAt,
    ToolCall,
    dumps,
    json_array,
    json_object,
    positive,
)

_RESPONSE_KEYS = frozenset({"id", "name", "response", "willContinue", "scheduling", "parts"})

STREAM_METHOD = ":streamGenerateContent"
"""The streamed method (``?alt=sse``: one ``data:`` event per chunk, each a whole response)."""
COUNT_METHOD = ":countTokens"
"""A token count is a method of the model (``…/models/M:countTokens``), not a suffix of the
generate path; its body is ``{"contents": [...]}`` (Gemini CLI counts only a new message
holding media), its answer ``{"totalTokens": N}`` (:func:`count_answer`)."""


def streams(path: str) -> bool:
    """A request on this path is answered as a stream of SSE chunks."""
    return STREAM_METHOD in path.split("?", 1)[0]


def count_answer(tokens: int) -> JSON:
    """The answer to ``:countTokens``."""
    return {"totalTokens": tokens}


def response_schema(body: Mapping[str, Any]) -> object | None:
    """The JSON schema a request asks the answer's text to follow
    (``generationConfig.responseJsonSchema``, or the older ``responseSchema``; types may be
    upper case: ``OBJECT``, ``STRING``), None when it asks for free text. Gemini CLI's side
    calls (its model router, its loop detector) ask for one."""
    config = json_object(body.get("generationConfig"))
    found: object = config.get("responseJsonSchema") or config.get("responseSchema")
    return json_object(found) or None


def _parts(item: object) -> list[JSON]:
    return [json_object(p) for p in json_array(json_object(item).get("parts"))]


def _named(item: object, kind: str) -> list[tuple[int, JSON, int]]:
    """The ``kind`` parts (``functionCall``, ``functionResponse``) of a content: (the part's
    index, the call or response, how many of that name came before it in the content)."""
    seen: dict[str, int] = {}
    out: list[tuple[int, JSON, int]] = []
    for index, part in enumerate(_parts(item)):
        value = part.get(kind)
        if isinstance(value, dict):
            fields = json_object(cast(object, value))
            name = str(fields.get("name") or "")
            out.append((index, fields, seen.get(name, 0)))
            seen[name] = seen.get(name, 0) + 1
    return out


def _id(own: JSON, name: str, n: int, other: object, kind: str, turn: int) -> str:
    """A call's id: its own, else its counterpart's (the ``n``-th of ``name`` in ``other``),
    else ``NAME#TURN.N``."""
    if isinstance(own.get("id"), str) and own["id"]:
        return str(own["id"])
    for _, fields, k in _named(other, kind):
        if k == n and fields.get("name") == name and isinstance(fields.get("id"), str):
            return str(fields["id"]) or f"{name}#{turn}.{n}"
    return f"{name}#{turn}.{n}"


def made_up_name(call_id: str) -> str | None:
    """The tool's name in an id :func:`_id` made up (``NAME#T.N``), else None."""
    name, mark, place = call_id.rpartition("#")
    turn, dot, n = place.partition(".")
    if mark and dot and turn.lstrip("-").isdigit() and n.isdigit() and name:
        return name
    return None


def _text(parts: list[JSON]) -> str:
    texts = [str(p["text"]) for p in parts if isinstance(p.get("text"), str)]
    texts += ["[image]" for p in parts if "inlineData" in p or "fileData" in p]
    return "\n".join(texts)


def result_text(response: object) -> str:
    """What a ``response`` object gives the model: its ``output`` (or ``content``, ``result``,
    ``error``) text, else the object as JSON."""
    fields = json_object(response)
    for key in ("output", "content", "result", "error"):
        if isinstance(fields.get(key), str) and len(fields) == 1:
            return str(fields[key])
    return dumps(response).decode("utf-8", "replace") if fields else ""


def piece_in(items: Sequence[object], index: int) -> Piece:
    """The content at ``index``, read with its neighbours (a call's result is in the next
    content, paired by id, else by name and order): a model turn's text (thoughts included)
    and calls; a user turn's ``functionResponse`` parts as role ``tool`` messages, then its
    text."""
    item = items[index]
    role = json_object(item).get("role")
    parts = _parts(item)
    if role == "model":
        after = items[index + 1] if index + 1 < len(items) else None
        calls = tuple(
            ToolCall(
                _id(f, str(f.get("name") or ""), n, after, "functionResponse", index),
                str(f.get("name") or ""),
                json_object(f.get("args")),
            )
            for _, f, n in _named(item, "functionCall")
        )
        return Piece((Message("assistant", _text(parts), calls),))
    if role not in ("user", None):
        return EMPTY
    before = items[index - 1] if index > 0 else None
    found: list[Message] = []
    results: list[ResultAt] = []
    for block, f, n in _named(item, "functionResponse"):
        call_id = _id(f, str(f.get("name") or ""), n, before, "functionCall", index - 1)
        value: object = f.get("response")
        results.append(ResultAt(block, call_id, "response", value, dumps(value)))
        error = set(json_object(value)) == {"error"}
        found.append(Message("tool", result_text(value), call_id=call_id, is_error=error))
    text = _text(parts)
    if text or not found:
        found.append(Message("user", text))
    return Piece(tuple(found), (), tuple(results))


def call_inputs_in(items: Sequence[object], index: int) -> tuple[InputAt, ...]:
    """Where the inputs (``args``) of the calls the content at ``index`` makes are: by their
    ids as :func:`piece_in` reads them; a call with no id of its own is named by its tool."""
    item = items[index]
    if json_object(item).get("role") != "model":
        return ()
    after = items[index + 1] if index + 1 < len(items) else None
    out: list[InputAt] = []
    for _, f, n in _named(item, "functionCall"):
        if "args" not in f:
            continue
        name = str(f.get("name") or "")
        call_id = _id(f, name, n, after, "functionResponse", index)
        if isinstance(f.get("id"), str) and f["id"] == call_id:
            out.append(InputAt(call_id, "id", "args", f["args"]))
        else:  # no id of its own (it may be its response's): named by its tool, in order
            out.append(InputAt(call_id, "name", "args", f["args"], named_by=name))
    return tuple(out)


def piece(item: object) -> Piece:
    """One content read alone (a call without an id is paired within the content only)."""
    return piece_in([item], 0)


def is_result(value: Mapping[str, Any]) -> bool:
    """A ``functionResponse`` object: a ``name``, a ``response`` object, no other keys but its
    own (a function declaration's ``response`` schema comes with ``description`` or
    ``parameters``)."""
    return (
        isinstance(value.get("name"), str)
        and isinstance(value.get("response"), dict)
        and set(value) <= _RESPONSE_KEYS
    )


def stub_value(original: object, text: str) -> object:
    """A stubbed ``response``: ``{"output": text}`` (a ``response`` must be an object)."""
    return {"output": text}


def tool_names(body: Mapping[str, Any]) -> list[str]:
    """The ``name`` of each ``functionDeclarations`` entry, in order."""
    names: list[str] = []
    for tool in json_array(body.get("tools")):
        for declaration in json_array(json_object(tool).get("functionDeclarations")):
            name = json_object(declaration).get("name")
            if isinstance(name, str) and name:
                names.append(name)
    return names


def session_of(body: Mapping[str, Any], headers: Mapping[str, str]) -> str:
    """None: Gemini's requests name no session."""
    return ""


def cache_ttl(body: Mapping[str, Any], raw: bytes) -> float:
    """Implicit caching: the default lifetime."""
    return CACHE_TTL_S


def model_of(body: Mapping[str, Any], path: str) -> str:
    """The model the path names (``…/models/gemini-2.5-pro:generateContent``), else the
    body's ``model``."""
    where = unquote(path.split("?", 1)[0])
    if "/models/" in where and ":" in where.rsplit("/models/", 1)[1]:
        return where.rsplit("/models/", 1)[1].split(":", 1)[0]
    return str(body.get("model") or "")


_USAGE = (
    ("promptTokenCount", "input_tokens"),
    ("cachedContentTokenCount", "cache_read"),
)


def usage(event: Mapping[str, Any]) -> dict[str, int]:
    """``usageMetadata`` of a JSON answer or an SSE chunk (``usage`` too: what
    :func:`usage_block` writes, wherever it is put); output is the candidates' tokens and the
    thoughts'."""
    found = json_object(event.get("usageMetadata") or event.get("usage"))
    if not found:
        return {}
    out = positive(found, _USAGE)
    produced = positive(found, (("candidatesTokenCount", "c"), ("thoughtsTokenCount", "t")))
    if produced:
        out["output_tokens"] = sum(produced.values())
    return out


def usage_block(prompt: int, output: int, cached: int, written: int) -> JSON:
    """``promptTokenCount`` is every input token (the cache has no writes to report)."""
    return {
        "promptTokenCount": prompt,
        "cachedContentTokenCount": cached,
        "candidatesTokenCount": output,
        "totalTokenCount": prompt + output,
    }


_CODES = {"INVALID_ARGUMENT": 400, "RESOURCE_EXHAUSTED": 429, "UNAVAILABLE": 503}


def error_body(
    message: str,
    kind: str | None = None,
    *,
    param: str | None = None,
    code: str | None = None,
    request_id: str | None = None,
) -> JSON:
    """``{"error": {"code", "message", "status"}}`` (``INTERNAL``, 500, by default)."""
    status = kind or "INTERNAL"
    return {"error": {"code": _CODES.get(status, 500), "message": message, "status": status}}


def error_of(body: object) -> tuple[str, str | None] | None:
    """``(message, status)`` of an error body (its ``code`` when it has no status)."""
    error = json_object(body).get("error")
    if not isinstance(error, dict):
        return None
    fields = json_object(cast(object, error))
    status = fields.get("status") or fields.get("code")
    return str(fields.get("message", "")), None if status is None else str(status)


def overflow_body(limit: int, counted: int, *, request_id: str | None = None) -> JSON:
    """``The input token count (M) exceeds the maximum number of tokens allowed (N).``"""
    text = (
        f"The input token count ({counted}) exceeds the maximum number of tokens allowed ({limit})."
    )
    return error_body(text, "INVALID_ARGUMENT")


DIALECT = Dialect(
    stub_value=stub_value,
    piece_in=piece_in,
    call_inputs_in=call_inputs_in,
    model_of=model_of,
    api="gemini",
    paths=(":generateContent", ":streamGenerateContent"),
    count_suffix=COUNT_METHOD,
    client_headers=("x-goog-api-key", "x-goog-api-client"),
    messages_key="contents",
    text_input=False,
    system_key="systemInstruction",
    fixed_keys=("systemInstruction", "tools"),
    call_key="id",
    made_up_name=made_up_name,
    is_result=is_result,
    piece=piece,
    tool_names=tool_names,
    session_of=session_of,
    cache_ttl=cache_ttl,
    cache_marker=None,
    usage=usage,
    usage_block=usage_block,
    input_counts_cache=True,
    error_body=error_body,
    error_of=error_of,
    overflow_body=overflow_body,
    request_id_header="x-request-id",
)
