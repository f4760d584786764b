"""Generic pydantic wrappers (Envelope[T], Page[T], Batch[T], Maybe[T]) around the corpus payloads (GENERIC_MODELS)."""

from __future__ import annotations

import uuid
from typing import Generic, Optional, TypeVar

from pydantic import BaseModel, ConfigDict, conint, conlist, constr
from structured_corpus_pydantic import (Book, ChatMessage, Comment, GeoPoint, Invoice, KeyValue, LineItem, ListNode,
                                        LogEntry, Message, Pixel, Product, Route, Ticket, TreeNode, UserProfile,
                                        Vitals, WeatherReport, Word)

T = TypeVar("T")


class Envelope(BaseModel, Generic[T]):
    data: T
    request_id: uuid.UUID


class Page(BaseModel, Generic[T]):
    items: conlist(T, max_length=2)
    total: conint(ge=0)
    next_cursor: Optional[Word] = None


class Batch(BaseModel, Generic[T]):
    model_config = ConfigDict(extra="forbid")
    operations: conlist(T, min_length=1, max_length=2)


class Maybe(BaseModel, Generic[T]):
    result: Optional[T] = None
    error: Optional[constr(max_length=40)] = None


# Generic wrappers: the same payloads nested one level deeper, as APIs return them.
GENERIC_MODELS: list[tuple[str, type]] = [
    ("envelope_user_profile", Envelope[UserProfile]), ("envelope_weather", Envelope[WeatherReport]),
    ("envelope_tree", Envelope[TreeNode]), ("envelope_list_int", Envelope[conlist(int, max_length=3)]),
    ("page_product", Page[Product]), ("page_comment", Page[Comment]), ("page_ticket", Page[Ticket]),
    ("page_log_entry", Page[LogEntry]), ("page_book", Page[Book]), ("page_str", Page[Word]),
    ("batch_line_item", Batch[LineItem]), ("batch_key_value", Batch[KeyValue]),
    ("batch_chat_message", Batch[ChatMessage]), ("batch_geo_point", Batch[GeoPoint]),
    ("maybe_invoice", Maybe[Invoice]), ("maybe_vitals", Maybe[Vitals]), ("maybe_route", Maybe[Route]),
    ("maybe_linked_list", Maybe[ListNode]), ("envelope_page_message", Envelope[Page[Message]]),
    ("page_envelope_pixel", Page[Envelope[Pixel]]),
]
