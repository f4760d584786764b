#!/usr/bin/env python3
"""Writes the structured-outputs corpus in tests/data/structured/ (deterministic: the same
pydantic gives the same bytes):

    python3 tools/reference/make_structured_corpus.py [--out tests/data/structured]

  json_schemas.jsonl  {"name", "schema", "refused"}: JSON Schemas, most of them from pydantic v2
                      models (Model.model_json_schema()), the rest written by hand in the style
                      of public schema collections (JSON Schema Store configs, GeoJSON, OpenAPI
                      components, JSON-RPC, CloudEvents, ...). "refused" is null for a schema the
                      engine must enforce, else the keyword its refusal must name.
  regexes.jsonl       {"name", "regex"}: patterns that Python's `re` and xgrammar read alike
                      (no lookarounds, no backreferences); outputs are checked with re.fullmatch.
  grammars.jsonl      {"name", "grammar", "check"}: xgrammar EBNF (GBNF style, root rule `root`);
                      "check" is a Python regex every sentence fullmatches, or null when the
                      language is not regular (tests/python/test_structured_corpus.py then has a
                      recognizer by that name).

Needs pydantic v2 (pip install pydantic). Nothing here imports the engine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal  # noqa: F401  (Decimal's pattern has a lookahead: kept out of the corpus, see README)
import enum
import json
import os
import re
import sys
import uuid
from typing import Annotated, Any, Generic, Literal, Optional, TypeVar, Union

try:
    import pydantic
    from pydantic import AnyUrl, BaseModel, ConfigDict, Field, HttpUrl, conint, conlist, constr
    from pydantic.networks import IPv4Address, IPv6Address
except ImportError:  # pragma: no cover
    sys.exit("make_structured_corpus.py needs pydantic v2: pip install pydantic")

if not pydantic.VERSION.startswith("2."):
    sys.exit(f"make_structured_corpus.py needs pydantic v2, found {pydantic.VERSION}")

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Formats as pydantic has no type for them (EmailStr needs the email-validator package).
Email = Annotated[str, Field(json_schema_extra={"format": "email"})]
Hostname = Annotated[str, Field(json_schema_extra={"format": "hostname"})]
Uri = Annotated[str, Field(json_schema_extra={"format": "uri"})]  # AnyUrl adds minLength: refused
UriRef = Annotated[str, Field(json_schema_extra={"format": "uri-reference"})]
Short = constr(min_length=1, max_length=24)
Word = constr(max_length=12)

# ---------------------------------------------------------------------------------------------
# pydantic models: typical application payloads
# ---------------------------------------------------------------------------------------------


class Role(str, enum.Enum):
    admin = "admin"
    editor = "editor"
    viewer = "viewer"


class Priority(int, enum.Enum):
    low = 1
    medium = 2
    high = 3


class Currency(str, enum.Enum):
    usd = "USD"
    eur = "EUR"
    jpy = "JPY"
    gbp = "GBP"


class Address(BaseModel):
    street: Short
    city: Short
    postal_code: Annotated[str, Field(pattern=r"^[0-9]{5}$")]
    country: Literal["US", "FR", "DE", "JP"]


class UserProfile(BaseModel):
    id: conint(ge=1)
    username: constr(min_length=3, max_length=16)
    email: Email
    age: Optional[conint(ge=13, le=120)] = None
    role: Role = Role.viewer
    is_active: bool


class UserWithAddress(BaseModel):
    name: Short
    address: Address
    shipping: Optional[Address] = None


class LineItem(BaseModel):
    sku: Annotated[str, Field(pattern=r"^[A-Z]{3}-[0-9]{4}$")]
    quantity: conint(ge=1, le=99)
    unit_price: Annotated[float, Field(gt=0, le=10000)]


class Order(BaseModel):
    order_id: uuid.UUID
    created_at: dt.datetime
    status: Literal["pending", "paid", "shipped", "cancelled"]
    items: conlist(LineItem, min_length=1, max_length=3)
    currency: Currency
    note: Optional[Word] = None


class Product(BaseModel):
    name: Short
    price: Annotated[float, Field(ge=0, lt=1000)]
    currency: Currency = Currency.usd
    tags: conlist(Word, max_length=4) = []
    in_stock: bool


class Author(BaseModel):
    name: Short
    email: Optional[Email] = None


class BlogPost(BaseModel):
    title: constr(min_length=1, max_length=40)
    author: Author
    published: dt.date
    tags: conlist(Word, min_length=1, max_length=3)
    draft: bool = False


class Comment(BaseModel):
    author: Word
    text: constr(max_length=40)
    replies: conlist("Comment", max_length=2) = []


class TreeNode(BaseModel):
    value: int
    children: conlist("TreeNode", max_length=2) = []


class ListNode(BaseModel):
    value: conint(ge=0, le=9)
    next: Optional["ListNode"] = None


class Category(BaseModel):
    name: Word
    subcategories: Optional[conlist("Category", max_length=2)] = None


class Event(BaseModel):
    title: Short
    starts_at: dt.datetime
    duration: dt.timedelta
    location: Optional[Short] = None
    attendees: conlist(Email, max_length=3) = []


class WeatherReport(BaseModel):
    city: Short
    temperature_c: Annotated[float, Field(ge=-60, le=60)]
    humidity: conint(ge=0, le=100)
    conditions: Literal["sunny", "cloudy", "rain", "snow", "fog"]
    wind_kph: Annotated[float, Field(ge=0)]


class InvoiceLine(BaseModel):
    description: constr(max_length=30)
    amount_cents: conint(ge=0)


class Invoice(BaseModel):
    number: Annotated[str, Field(pattern=r"^INV-[0-9]{6}$")]
    issued: dt.date
    due: dt.date
    lines: conlist(InvoiceLine, min_length=1, max_length=3)
    total_cents: conint(ge=0)
    paid: bool


class LoginRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    username: constr(min_length=3, max_length=20)
    password: constr(min_length=8, max_length=32)
    remember_me: bool = False


class ErrorResponse(BaseModel):
    code: conint(ge=400, le=599)
    message: constr(max_length=60)
    details: dict[str, Word] = {}


class FeatureFlags(BaseModel):
    flags: dict[str, bool]


class Limits(BaseModel):
    quotas: dict[str, conint(ge=0, le=1000)]


class Coordinates(BaseModel):
    point: tuple[float, float]
    label: Optional[Word] = None


class GeoPoint(BaseModel):
    lat: Annotated[float, Field(ge=-90, le=90)]
    lon: Annotated[float, Field(ge=-180, le=180)]


class Cat(BaseModel):
    pet_type: Literal["cat"]
    meows: conint(ge=0, le=10)


class Dog(BaseModel):
    pet_type: Literal["dog"]
    barks: Annotated[float, Field(ge=0, le=10)]


class Lizard(BaseModel):
    pet_type: Literal["lizard"]
    scales: bool


class Owner(BaseModel):
    name: Short
    pet: Annotated[Union[Cat, Dog, Lizard], Field(discriminator="pet_type")]


class OwnerUndiscriminated(BaseModel):
    name: Short
    pet: Union[Cat, Dog]


class ScalarUnion(BaseModel):
    value: Union[int, str, list[int]]
    maybe: Optional[Union[bool, float]] = None


class Department(BaseModel):
    name: Word
    budget: conint(ge=0)


class Employee(BaseModel):
    name: Short
    title: Word
    skills: conlist(Word, max_length=3)
    manager: Optional[Short] = None


class Team(BaseModel):
    department: Department
    members: conlist(Employee, min_length=1, max_length=2)


class Company(BaseModel):
    name: Short
    founded: conint(ge=1800, le=2030)
    teams: conlist(Team, max_length=2)


class ChatMessage(BaseModel):
    role: Literal["system", "user", "assistant", "tool"]
    content: constr(max_length=60)


class ToolCall(BaseModel):
    id: Annotated[str, Field(pattern=r"^call_[a-z0-9]{8}$")]
    name: Literal["get_weather", "search", "send_email"]
    arguments: dict[str, Union[str, int, bool]]


class AssistantTurn(BaseModel):
    message: ChatMessage
    tool_calls: conlist(ToolCall, max_length=2) = []


class BankTransaction(BaseModel):
    id: uuid.UUID
    amount_cents: conint(multiple_of=5, ge=-100000, le=100000)
    kind: Literal["debit", "credit"]
    booked: dt.date
    counterparty: Optional[Short] = None


class CashWithdrawal(BaseModel):
    account: Annotated[str, Field(pattern=r"^[0-9]{8}$")]
    amount_cents: conint(multiple_of=500)
    fee_cents: Optional[conint(multiple_of=25)] = None
    atm: bool


class Meeting(BaseModel):
    day: dt.date
    start: dt.time
    end: dt.time
    room: Annotated[str, Field(pattern=r"^[A-D][0-9]{3}$")]


class NetworkDevice(BaseModel):
    hostname: Hostname
    ipv4: IPv4Address
    ipv6: Optional[IPv6Address] = None
    mac: Annotated[str, Field(pattern=r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$")]
    vlan: conint(ge=1, le=4094)


class Ingredient(BaseModel):
    name: Word
    quantity: Annotated[float, Field(gt=0, le=1000)]
    unit: Literal["g", "kg", "ml", "l", "cup", "tbsp", "tsp", "piece"]


class Recipe(BaseModel):
    title: Short
    servings: conint(ge=1, le=12)
    ingredients: conlist(Ingredient, min_length=1, max_length=4)
    steps: conlist(constr(max_length=40), min_length=1, max_length=3)
    vegetarian: bool


class MovieReview(BaseModel):
    movie: Short
    rating: conint(ge=1, le=5)
    sentiment: Literal["positive", "neutral", "negative"]
    spoilers: bool = False


class SensorReading(BaseModel):
    sensor_id: Annotated[str, Field(pattern=r"^S[0-9]{3}$")]
    timestamp: dt.datetime
    values: conlist(Annotated[float, Field(ge=-50, le=150)], min_length=2, max_length=4)
    unit: Literal["C", "F", "K"]


class StrictForm(BaseModel):
    model_config = ConfigDict(extra="forbid")
    first_name: Short
    last_name: Short
    newsletter: bool


class OpenForm(BaseModel):
    model_config = ConfigDict(extra="allow")
    first_name: Short


class AddressBook(BaseModel):
    entries: dict[str, Address]


class Matrix(BaseModel):
    rows: conlist(conlist(conint(ge=0, le=9), min_length=2, max_length=2), min_length=2, max_length=2)


class Release(BaseModel):
    version: Annotated[str, Field(pattern=r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")]
    channel: Literal["stable", "beta", "nightly"]
    yanked: Literal[False] = False


class DiceRoll(BaseModel):
    sides: Literal[4, 6, 8, 12, 20]
    result: conint(ge=1, le=20)


class Person(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    first_name: Short = Field(alias="firstName")
    last_name: Short = Field(alias="lastName")
    birth_date: Optional[dt.date] = Field(default=None, alias="birthDate")


class Survey(BaseModel):
    respondent: uuid.UUID
    answers: conlist(Optional[conint(ge=0, le=10)], min_length=1, max_length=5)
    comment: Optional[constr(max_length=50)] = None


class Metadata(BaseModel):
    extra: dict[str, Any]


class Task(BaseModel):
    title: Short
    priority: Priority
    done: bool
    due: Optional[dt.date] = None
    subtasks: conlist("Task", max_length=2) = []


class Folder(BaseModel):
    name: Word
    files: conlist(Word, max_length=3) = []
    folders: conlist("Folder", max_length=2) = []


class Expr(BaseModel):
    op: Literal["+", "-", "*", "/"]
    left: Union[int, "Expr"]
    right: Union[int, "Expr"]


class JsonValueHolder(BaseModel):
    value: Union[None, bool, int, float, str]


class FlightBooking(BaseModel):
    flight: Annotated[str, Field(pattern=r"^[A-Z]{2}[0-9]{2,4}$")]
    origin: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
    destination: Annotated[str, Field(pattern=r"^[A-Z]{3}$")]
    departure: dt.datetime
    seat: Optional[Annotated[str, Field(pattern=r"^[0-9]{1,2}[A-F]$")]] = None
    passengers: conint(ge=1, le=9)


class Hotel(BaseModel):
    name: Short
    stars: conint(ge=1, le=5)
    price_per_night: Annotated[float, Field(gt=0, lt=5000)]
    amenities: conlist(Literal["wifi", "pool", "gym", "spa", "parking"], max_length=3)


class Patient(BaseModel):
    patient_id: uuid.UUID
    name: Short
    birth_date: dt.date
    blood_type: Literal["A+", "A-", "B+", "B-", "AB+", "AB-", "O+", "O-"]
    allergies: conlist(Word, max_length=3) = []


class Vitals(BaseModel):
    heart_rate: conint(ge=20, le=250)
    systolic: conint(ge=50, le=250)
    diastolic: conint(ge=30, le=150)
    temperature: Annotated[float, Field(ge=30, le=45)]


class Book(BaseModel):
    isbn: Annotated[str, Field(pattern=r"^97[89][0-9]{10}$")]
    title: constr(max_length=40)
    authors: conlist(Short, min_length=1, max_length=2)
    year: conint(ge=1450, le=2030)


class Library(BaseModel):
    name: Short
    books: conlist(Book, max_length=2)


class Student(BaseModel):
    name: Short
    grade: conint(ge=1, le=12)
    scores: dict[str, conint(ge=0, le=100)]


class Course(BaseModel):
    code: Annotated[str, Field(pattern=r"^[A-Z]{2,4}[0-9]{3}$")]
    credits: conint(ge=1, le=6)
    prerequisites: conlist(Annotated[str, Field(pattern=r"^[A-Z]{2,4}[0-9]{3}$")], max_length=2) = []


class Vehicle(BaseModel):
    vin: Annotated[str, Field(pattern=r"^[A-HJ-NPR-Z0-9]{17}$")]
    make: Word
    year: conint(ge=1950, le=2030)
    fuel: Literal["petrol", "diesel", "electric", "hybrid"]
    mileage_km: conint(ge=0)


class StockQuote(BaseModel):
    symbol: Annotated[str, Field(pattern=r"^[A-Z]{1,5}$")]
    price: Annotated[float, Field(gt=0)]
    change_pct: Annotated[float, Field(ge=-100, le=1000)]
    volume: conint(ge=0)
    as_of: dt.datetime


class Notification(BaseModel):
    channel: Literal["email", "sms", "push"]
    to: Union[Email, Annotated[str, Field(pattern=r"^\+[0-9]{8,12}$")]]
    body: constr(max_length=50)
    urgent: bool


class Webhook(BaseModel):
    url: Uri
    events: conlist(Literal["push", "pull_request", "issues", "release"], min_length=1, max_length=3)
    secret: Optional[constr(min_length=8, max_length=16)] = None
    active: bool = True


class Link(BaseModel):
    rel: Literal["self", "next", "prev", "first", "last"]
    href: UriRef


class Color(BaseModel):
    rgb: tuple[conint(ge=0, le=255), conint(ge=0, le=255), conint(ge=0, le=255)]
    name: Optional[Word] = None


class Rectangle(BaseModel):
    shape: Literal["rectangle"]
    width: Annotated[float, Field(gt=0, le=100)]
    height: Annotated[float, Field(gt=0, le=100)]


class Circle(BaseModel):
    shape: Literal["circle"]
    radius: Annotated[float, Field(gt=0, le=100)]


class Drawing(BaseModel):
    shapes: conlist(Annotated[Union[Rectangle, Circle], Field(discriminator="shape")], min_length=1, max_length=3)


class KeyValue(BaseModel):
    key: Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]{0,15}$")]
    value: Union[str, int, float, bool, None]


class LogEntry(BaseModel):
    ts: dt.datetime
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"]
    logger: Word
    message: constr(max_length=60)
    context: dict[str, str] = {}


class Timesheet(BaseModel):
    employee: Short
    week_of: dt.date
    hours: tuple[Annotated[float, Field(ge=0, le=24)], ...]


class Ticket(BaseModel):
    id: conint(ge=1)
    summary: constr(max_length=50)
    priority: Priority
    assignee: Optional[Email] = None
    labels: conlist(Word, max_length=3) = []
    status: Literal["open", "in_progress", "closed"]


class SearchQuery(BaseModel):
    q: constr(min_length=1, max_length=30)
    page: conint(ge=1, le=100) = 1
    per_page: Literal[10, 25, 50] = 10
    sort: Optional[Literal["relevance", "date", "price"]] = None
    filters: dict[str, conlist(Word, max_length=2)] = {}


class Geofence(BaseModel):
    center: GeoPoint
    radius_m: Annotated[float, Field(gt=0, le=50000)]
    name: Short


class RouteStep(BaseModel):
    instruction: constr(max_length=40)
    distance_m: conint(ge=0)


class Route(BaseModel):
    start: GeoPoint
    end: GeoPoint
    steps: conlist(RouteStep, min_length=1, max_length=3)


class Measurement(BaseModel):
    value: Annotated[float, Field(gt=-1, lt=1)]
    ratio: Annotated[float, Field(ge=0, le=1)]
    count: Annotated[int, Field(gt=0, lt=10)]


class Permission(BaseModel):
    resource: Word
    actions: conlist(Literal["read", "write", "delete"], min_length=1, max_length=3)


class RoleDef(BaseModel):
    name: Role
    permissions: conlist(Permission, max_length=2)
    inherits: Optional[Role] = None


class ApiKey(BaseModel):
    key_id: uuid.UUID
    created: dt.datetime
    expires: Optional[dt.datetime] = None
    scopes: conlist(Literal["read", "write", "admin"], min_length=1, max_length=3)


class Pixel(BaseModel):
    x: conint(ge=0, le=1919)
    y: conint(ge=0, le=1079)


class Polyline(BaseModel):
    points: conlist(Pixel, min_length=2, max_length=4)
    closed: bool


class Nutrition(BaseModel):
    calories: conint(ge=0, le=5000)
    protein_g: Annotated[float, Field(ge=0, le=500)]
    fat_g: Annotated[float, Field(ge=0, le=500)]
    carbs_g: Annotated[float, Field(ge=0, le=500)]


class MenuItem(BaseModel):
    name: Short
    price: Annotated[float, Field(gt=0, le=200)]
    nutrition: Optional[Nutrition] = None
    spicy: Literal[0, 1, 2, 3] = 0


class Menu(BaseModel):
    restaurant: Short
    sections: dict[str, conlist(MenuItem, max_length=2)]


class Translation(BaseModel):
    source_lang: Literal["en", "fr", "de", "es", "ja"]
    target_lang: Literal["en", "fr", "de", "es", "ja"]
    text: constr(max_length=60)
    confidence: Annotated[float, Field(ge=0, le=1)]


class Classification(BaseModel):
    label: Literal["spam", "ham"]
    score: Annotated[float, Field(ge=0, le=1)]


class Entity(BaseModel):
    text: constr(max_length=20)
    type: Literal["PERSON", "ORG", "LOC", "DATE"]
    start: conint(ge=0)
    end: conint(ge=0)


class NerResult(BaseModel):
    entities: conlist(Entity, max_length=3)


class Answer(BaseModel):
    answer: constr(max_length=60)
    citations: conlist(conint(ge=1, le=10), max_length=3)
    confidence: Literal["low", "medium", "high"]


class Sql(BaseModel):
    table: Annotated[str, Field(pattern=r"^[a-z_]{1,12}$")]
    columns: conlist(Annotated[str, Field(pattern=r"^[a-z_]{1,12}$")], min_length=1, max_length=3)
    limit: Optional[conint(ge=1, le=1000)] = None


class Backup(BaseModel):
    path: Annotated[str, Field(pattern=r"^(/[a-z0-9_]{1,8}){1,4}$")]
    size_bytes: conint(ge=0)
    checksum: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    created: dt.datetime


class CronJob(BaseModel):
    name: Word
    schedule: Annotated[str, Field(pattern=r"^(\*|[0-9]{1,2}) (\*|[0-9]{1,2}) \* \* \*$")]
    command: constr(max_length=40)
    enabled: bool


class Dimensions(BaseModel):
    length_cm: Annotated[float, Field(gt=0, le=500)]
    width_cm: Annotated[float, Field(gt=0, le=500)]
    height_cm: Annotated[float, Field(gt=0, le=500)]


class Shipment(BaseModel):
    tracking: Annotated[str, Field(pattern=r"^1Z[0-9A-Z]{16}$")]
    carrier: Literal["UPS", "FedEx", "DHL", "USPS"]
    weight_kg: Annotated[float, Field(gt=0, le=70)]
    dimensions: Dimensions
    to: Address


class GenericResult(BaseModel):
    ok: bool
    data: Optional[dict[str, Any]] = None
    error: Optional[ErrorResponse] = None


class Playlist(BaseModel):
    name: Short
    tracks: conlist(tuple[Short, conint(ge=1, le=900)], max_length=3)


class Version(BaseModel):
    major: conint(ge=0, le=99)
    minor: conint(ge=0, le=99)
    patch: conint(ge=0, le=99)


class Dependency(BaseModel):
    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,20}$")]
    version: Version
    optional: bool = False


class Package(BaseModel):
    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,20}$")]
    version: Version
    dependencies: conlist(Dependency, max_length=2) = []


class Poll(BaseModel):
    question: constr(max_length=50)
    options: conlist(constr(max_length=20), min_length=2, max_length=4)
    multiple: bool
    closes: Optional[dt.datetime] = None


class Reaction(BaseModel):
    emoji: Literal["👍", "❤️", "😂", "🎉"]
    count: conint(ge=0, le=1000)


class Message(BaseModel):
    id: uuid.UUID
    sender: Word
    text: constr(max_length=50)
    reactions: conlist(Reaction, max_length=2) = []
    reply_to: Optional[uuid.UUID] = None


class Thermostat(BaseModel):
    mode: Literal["heat", "cool", "auto", "off"]
    target_c: Annotated[float, Field(ge=10, le=30)]
    schedule: dict[Literal["weekday", "weekend"], conlist(conint(ge=0, le=23), max_length=3)]


class Wallet(BaseModel):
    balances: dict[Currency, conint(ge=0)]
    owner: Short


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


for _m in (Comment, TreeNode, ListNode, Category, Task, Folder, Expr):
    _m.model_rebuild()

PYDANTIC_MODELS: list[tuple[str, type]] = [
    ("address", Address), ("user_profile", UserProfile), ("user_with_address", UserWithAddress),
    ("line_item", LineItem), ("order", Order), ("product", Product), ("author", Author),
    ("blog_post", BlogPost), ("comment_thread", Comment), ("tree_node", TreeNode),
    ("linked_list", ListNode), ("category_tree", Category), ("event", Event),
    ("weather_report", WeatherReport), ("invoice", Invoice), ("login_request", LoginRequest),
    ("error_response", ErrorResponse), ("feature_flags", FeatureFlags), ("limits", Limits),
    ("coordinates_tuple", Coordinates), ("geo_point", GeoPoint), ("owner_discriminated", Owner),
    ("owner_undiscriminated", OwnerUndiscriminated), ("scalar_union", ScalarUnion),
    ("team", Team), ("company", Company), ("chat_message", ChatMessage), ("tool_call", ToolCall),
    ("assistant_turn", AssistantTurn), ("cash_withdrawal", CashWithdrawal), ("meeting", Meeting),
    ("network_device", NetworkDevice), ("recipe", Recipe), ("movie_review", MovieReview),
    ("sensor_reading", SensorReading), ("strict_form", StrictForm), ("open_form", OpenForm),
    ("address_book", AddressBook), ("matrix", Matrix), ("release", Release), ("dice_roll", DiceRoll),
    ("person_aliases", Person), ("survey", Survey), ("metadata_any", Metadata), ("task_tree", Task),
    ("folder_tree", Folder), ("expr_tree", Expr), ("json_value_holder", JsonValueHolder),
    ("flight_booking", FlightBooking), ("hotel", Hotel), ("patient", Patient), ("vitals", Vitals),
    ("book", Book), ("library", Library), ("student", Student), ("course", Course),
    ("vehicle", Vehicle), ("stock_quote", StockQuote), ("notification", Notification),
    ("webhook", Webhook), ("link", Link), ("color", Color), ("drawing", Drawing),
    ("key_value", KeyValue), ("log_entry", LogEntry), ("timesheet", Timesheet), ("ticket", Ticket),
    ("search_query", SearchQuery), ("geofence", Geofence), ("route", Route),
    ("measurement", Measurement), ("role_def", RoleDef), ("api_key", ApiKey), ("polyline", Polyline),
    ("menu_item", MenuItem), ("menu", Menu), ("translation", Translation),
    ("classification", Classification), ("ner_result", NerResult), ("answer", Answer),
    ("sql", Sql), ("backup", Backup), ("cron_job", CronJob), ("shipment", Shipment),
    ("generic_result", GenericResult), ("playlist", Playlist), ("package", Package), ("poll", Poll),
    ("message", Message), ("thermostat", Thermostat), ("wallet", Wallet), ("employee", Employee),
    ("department", Department), ("ingredient", Ingredient), ("nutrition", Nutrition),
    ("dimensions", Dimensions), ("permission", Permission), ("entity", Entity), ("pixel", Pixel),
    ("version", Version), ("dependency", Dependency), ("reaction", Reaction),
    ("rectangle", Rectangle), ("circle", Circle), ("cat", Cat), ("dog", Dog),
]

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

# ---------------------------------------------------------------------------------------------
# Handwritten schemas, in the style of public collections
# ---------------------------------------------------------------------------------------------

GEO_POSITION = {"type": "array", "prefixItems": [{"type": "number", "minimum": -180, "maximum": 180},
                                                 {"type": "number", "minimum": -90, "maximum": 90}],
                "items": False, "minItems": 2, "maxItems": 2}
GEO_POINT = {"type": "object", "properties": {"type": {"const": "Point"}, "coordinates": GEO_POSITION},
             "required": ["type", "coordinates"], "additionalProperties": False}

HANDWRITTEN: list[tuple[str, dict]] = [
    # JSON Schema Store-like configuration files (trimmed)
    ("store_package_json", {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "title": "package.json (subset)",
        "type": "object",
        "properties": {
            "name": {"type": "string", "pattern": "^(@[a-z0-9-]{1,10}/)?[a-z0-9-]{1,20}$"},
            "version": {"type": "string", "pattern": "^[0-9]{1,2}\\.[0-9]{1,2}\\.[0-9]{1,2}$"},
            "private": {"type": "boolean"},
            "license": {"enum": ["MIT", "Apache-2.0", "BSD-3-Clause", "ISC"]},
            "scripts": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 30},
                        "maxProperties": 3},
            "dependencies": {"type": "object", "additionalProperties": {"type": "string", "pattern": "^\\^[0-9]\\.[0-9]\\.[0-9]$"}},
        },
        "required": ["name", "version"], "additionalProperties": False}),
    ("store_tsconfig", {
        "title": "tsconfig.json (subset)", "type": "object",
        "properties": {
            "compilerOptions": {"type": "object", "properties": {
                "target": {"enum": ["es5", "es2015", "es2020", "esnext"]},
                "module": {"enum": ["commonjs", "esnext", "node16"]},
                "strict": {"type": "boolean"},
                "outDir": {"type": "string", "maxLength": 20},
                "lib": {"type": "array", "items": {"enum": ["dom", "es2020", "esnext"]}, "maxItems": 2}},
                "additionalProperties": False},
            "include": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 2}},
        "required": ["compilerOptions"], "additionalProperties": False}),
    ("store_eslintrc", {
        "title": ".eslintrc (subset)", "type": "object",
        "properties": {
            "root": {"type": "boolean"},
            "env": {"type": "object", "properties": {"browser": {"type": "boolean"}, "node": {"type": "boolean"}},
                    "additionalProperties": False},
            "extends": {"anyOf": [{"type": "string", "maxLength": 24},
                                  {"type": "array", "items": {"type": "string", "maxLength": 24}, "maxItems": 2}]},
            "rules": {"type": "object", "additionalProperties": {
                "anyOf": [{"enum": ["off", "warn", "error"]}, {"enum": [0, 1, 2]}]}}},
        "required": ["rules"], "additionalProperties": False}),
    ("store_github_workflow", {
        "title": "GitHub workflow (subset)", "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 20},
            "on": {"type": "array", "items": {"enum": ["push", "pull_request", "workflow_dispatch"]},
                   "minItems": 1, "maxItems": 2},
            "jobs": {"type": "object", "minProperties": 1, "maxProperties": 2, "additionalProperties": {
                "type": "object",
                "properties": {"runs-on": {"enum": ["ubuntu-latest", "macos-latest", "windows-latest"]},
                               "steps": {"type": "array", "minItems": 1, "maxItems": 2, "items": {
                                   "type": "object",
                                   "properties": {"uses": {"type": "string", "pattern": "^[a-z-]+/[a-z-]+@v[0-9]$"},
                                                  "run": {"type": "string", "maxLength": 30}},
                                   "additionalProperties": False}}},
                "required": ["runs-on", "steps"], "additionalProperties": False}}},
        "required": ["on", "jobs"], "additionalProperties": False}),
    ("store_docker_compose", {
        "title": "docker-compose (subset)", "type": "object",
        "properties": {
            "version": {"enum": ["3.8", "3.9"]},
            "services": {"type": "object", "maxProperties": 2, "propertyNames": {"pattern": "^[a-z][a-z0-9_-]{0,10}$"},
                         "additionalProperties": {
                "type": "object",
                "properties": {"image": {"type": "string", "pattern": "^[a-z0-9]+(:[a-z0-9.]+)?$"},
                               "ports": {"type": "array", "items": {"type": "string", "pattern": "^[0-9]{2,5}:[0-9]{2,5}$"},
                                         "maxItems": 2},
                               "restart": {"enum": ["no", "always", "on-failure", "unless-stopped"]}},
                "required": ["image"], "additionalProperties": False}}},
        "required": ["services"], "additionalProperties": False}),
    ("store_prettierrc", {
        "title": ".prettierrc", "type": "object",
        "properties": {"printWidth": {"type": "integer", "minimum": 40, "maximum": 200},
                       "tabWidth": {"type": "integer", "minimum": 1, "maximum": 8},
                       "useTabs": {"type": "boolean"}, "semi": {"type": "boolean"},
                       "singleQuote": {"type": "boolean"},
                       "trailingComma": {"enum": ["none", "es5", "all"]},
                       "endOfLine": {"enum": ["lf", "crlf", "cr", "auto"]}},
        "additionalProperties": False}),
    ("store_renovate", {
        "title": "renovate.json (subset)", "type": "object",
        "properties": {"extends": {"type": "array", "items": {"enum": ["config:base", "config:recommended", ":semanticCommits"]},
                                   "minItems": 1, "maxItems": 2},
                       "schedule": {"type": "array", "items": {"type": "string", "maxLength": 24}, "maxItems": 1},
                       "automerge": {"type": "boolean"},
                       "packageRules": {"type": "array", "maxItems": 2, "items": {
                           "type": "object",
                           "properties": {"matchPackageNames": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 2},
                                          "automerge": {"type": "boolean"}},
                           "additionalProperties": False}}},
        "additionalProperties": False}),
    ("store_web_manifest", {
        "title": "Web app manifest (subset)", "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 24}, "short_name": {"type": "string", "maxLength": 12},
                       "start_url": {"type": "string", "format": "uri-reference"},
                       "display": {"enum": ["fullscreen", "standalone", "minimal-ui", "browser"]},
                       "theme_color": {"type": "string", "pattern": "^#[0-9a-fA-F]{6}$"},
                       "icons": {"type": "array", "maxItems": 2, "items": {
                           "type": "object",
                           "properties": {"src": {"type": "string", "format": "uri-reference"},
                                          "sizes": {"type": "string", "pattern": "^[0-9]{2,3}x[0-9]{2,3}$"},
                                          "type": {"enum": ["image/png", "image/svg+xml"]}},
                           "required": ["src", "sizes"], "additionalProperties": False}}},
        "required": ["name", "start_url"], "additionalProperties": False}),
    ("store_babelrc", {
        "title": ".babelrc", "type": "object",
        "properties": {"presets": {"type": "array", "maxItems": 2, "items": {"anyOf": [
                           {"type": "string", "maxLength": 20},
                           {"type": "array", "prefixItems": [{"type": "string", "maxLength": 20},
                                                              {"type": "object", "additionalProperties": {"type": "boolean"}}],
                            "items": False, "minItems": 2}]}},
                       "plugins": {"type": "array", "items": {"type": "string", "maxLength": 30}, "maxItems": 2},
                       "sourceMaps": {"enum": [True, False, "inline", "both"]}},
        "additionalProperties": False}),
    ("store_editor_settings", {
        "title": "editor settings", "type": "object",
        "properties": {"editor.fontSize": {"type": "integer", "minimum": 6, "maximum": 100},
                       "editor.tabSize": {"type": "integer", "exclusiveMinimum": 0, "maximum": 16},
                       "files.autoSave": {"enum": ["off", "afterDelay", "onFocusChange", "onWindowChange"]},
                       "files.exclude": {"type": "object", "additionalProperties": {"type": "boolean"}}},
        "additionalProperties": False}),
    ("store_pyproject_tool", {
        "title": "pyproject [tool.ruff] (subset)", "type": "object",
        "properties": {"line-length": {"type": "integer", "minimum": 1, "maximum": 320},
                       "target-version": {"enum": ["py38", "py39", "py310", "py311", "py312"]},
                       "select": {"type": "array", "items": {"type": "string", "pattern": "^[A-Z]{1,3}[0-9]{0,4}$"}, "maxItems": 3},
                       "ignore": {"type": "array", "items": {"type": "string", "pattern": "^[A-Z]{1,3}[0-9]{0,4}$"}, "maxItems": 3}},
        "additionalProperties": False}),
    ("store_cloud_init_like", {
        "title": "cloud-config (subset)", "type": "object",
        "properties": {"hostname": {"type": "string", "format": "hostname"},
                       "users": {"type": "array", "maxItems": 2, "items": {
                           "type": "object",
                           "properties": {"name": {"type": "string", "pattern": "^[a-z_][a-z0-9_-]{0,15}$"},
                                          "sudo": {"type": ["string", "null"], "maxLength": 30},
                                          "groups": {"type": "array", "items": {"enum": ["sudo", "docker", "wheel"]}, "maxItems": 2}},
                           "required": ["name"], "additionalProperties": False}},
                       "packages": {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9.+-]{1,20}$"}, "maxItems": 3},
                       "package_update": {"type": "boolean"}},
        "additionalProperties": False}),
    # GeoJSON-like (RFC 7946 shapes, trimmed)
    ("geojson_point", GEO_POINT),
    ("geojson_linestring", {"type": "object", "properties": {
        "type": {"const": "LineString"},
        "coordinates": {"type": "array", "items": GEO_POSITION, "minItems": 2, "maxItems": 3}},
        "required": ["type", "coordinates"], "additionalProperties": False}),
    ("geojson_polygon", {"type": "object", "properties": {
        "type": {"const": "Polygon"},
        "coordinates": {"type": "array", "maxItems": 1, "minItems": 1,
                        "items": {"type": "array", "items": GEO_POSITION, "minItems": 4, "maxItems": 4}}},
        "required": ["type", "coordinates"], "additionalProperties": False}),
    ("geojson_feature", {"type": "object", "properties": {
        "type": {"const": "Feature"}, "geometry": {"anyOf": [{"type": "null"}, GEO_POINT]},
        "properties": {"type": ["object", "null"], "additionalProperties": {"type": ["string", "number"]}, "maxProperties": 2},
        "id": {"anyOf": [{"type": "string", "maxLength": 10}, {"type": "integer"}]}},
        "required": ["type", "geometry", "properties"], "additionalProperties": False}),
    ("geojson_feature_collection", {"$defs": {"point": GEO_POINT, "feature": {
        "type": "object", "properties": {"type": {"const": "Feature"}, "geometry": {"$ref": "#/$defs/point"},
                                         "properties": {"type": "null"}},
        "required": ["type", "geometry", "properties"], "additionalProperties": False}},
        "type": "object", "properties": {"type": {"const": "FeatureCollection"},
                                         "features": {"type": "array", "items": {"$ref": "#/$defs/feature"}, "maxItems": 2}},
        "required": ["type", "features"], "additionalProperties": False}),
    ("geojson_geometry_union", {"oneOf": [
        GEO_POINT,
        {"type": "object", "properties": {"type": {"const": "MultiPoint"},
                                          "coordinates": {"type": "array", "items": GEO_POSITION, "maxItems": 2}},
         "required": ["type", "coordinates"], "additionalProperties": False}]}),
    # OpenAPI-like components (draft-07 "definitions" and "#/components" style refs)
    ("openapi_petstore_pet", {"definitions": {
        "Category": {"type": "object", "properties": {"id": {"type": "integer", "format": "int64"},
                                                      "name": {"type": "string", "maxLength": 16}}, "additionalProperties": False},
        "Tag": {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string", "maxLength": 12}},
                "additionalProperties": False}},
        "type": "object", "properties": {
            "id": {"type": "integer", "format": "int64", "minimum": 1},
            "name": {"type": "string", "maxLength": 20},
            "category": {"$ref": "#/definitions/Category"},
            "photoUrls": {"type": "array", "items": {"type": "string", "format": "uri"}, "maxItems": 1},
            "tags": {"type": "array", "items": {"$ref": "#/definitions/Tag"}, "maxItems": 2},
            "status": {"type": "string", "enum": ["available", "pending", "sold"]}},
        "required": ["name", "photoUrls"], "additionalProperties": False}),
    ("openapi_components_refs", {"components": {"schemas": {
        "Error": {"type": "object", "properties": {"code": {"type": "integer", "format": "int32"},
                                                   "message": {"type": "string", "maxLength": 40}},
                  "required": ["code", "message"], "additionalProperties": False},
        "NewPet": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 16},
                                                    "tag": {"type": "string", "maxLength": 10}},
                   "required": ["name"], "additionalProperties": False}}},
        "type": "object", "properties": {"pet": {"$ref": "#/components/schemas/NewPet"},
                                         "error": {"anyOf": [{"$ref": "#/components/schemas/Error"}, {"type": "null"}]}},
        "required": ["pet", "error"], "additionalProperties": False}),
    ("openapi_problem_details", {
        "title": "RFC 7807 problem details", "type": "object",
        "properties": {"type": {"type": "string", "format": "uri-reference"},
                       "title": {"type": "string", "maxLength": 40},
                       "status": {"type": "integer", "minimum": 100, "exclusiveMaximum": 600},
                       "detail": {"type": "string", "maxLength": 60},
                       "instance": {"type": "string", "format": "uri-reference"}},
        "required": ["title", "status"], "additionalProperties": False}),
    ("openapi_allof_single", {"$defs": {"Base": {"type": "object", "properties": {
        "id": {"type": "string", "format": "uuid"}, "created": {"type": "string", "format": "date-time"}},
        "required": ["id", "created"]}},
        "allOf": [{"$ref": "#/$defs/Base"}]}),
    ("openapi_pagination_links", {"type": "object", "properties": {
        "self": {"type": "string", "format": "uri"}, "next": {"type": ["string", "null"], "format": "uri"},
        "count": {"type": "integer", "minimum": 0, "maximum": 1000}},
        "required": ["self", "next", "count"], "additionalProperties": False}),
    ("openapi_nullable_fields", {"type": "object", "properties": {
        "nickname": {"type": ["string", "null"], "maxLength": 12},
        "score": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "level": {"type": ["integer", "null"], "minimum": 1, "maximum": 9}},
        "required": ["nickname", "score", "level"], "additionalProperties": False}),
    # protocols
    ("jsonrpc_request", {"type": "object", "properties": {
        "jsonrpc": {"const": "2.0"}, "method": {"type": "string", "pattern": "^[a-z]+(\\.[a-z]+)?$"},
        "params": {"anyOf": [{"type": "array", "maxItems": 3, "items": {"type": ["string", "number", "boolean", "null"]}},
                             {"type": "object", "maxProperties": 3, "additionalProperties": {"type": ["string", "integer"]}}]},
        "id": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "maxLength": 8}]}},
        "required": ["jsonrpc", "method", "id"], "additionalProperties": False}),
    ("jsonrpc_response", {"type": "object", "properties": {
        "jsonrpc": {"const": "2.0"}, "id": {"type": "integer", "minimum": 0},
        "result": {"type": ["string", "integer", "boolean"], "maxLength": 20},
        "error": {"type": "object", "properties": {"code": {"type": "integer", "minimum": -32768, "maximum": -32000},
                                                  "message": {"type": "string", "maxLength": 30}},
                  "required": ["code", "message"], "additionalProperties": False}},
        "required": ["jsonrpc", "id"], "additionalProperties": False}),
    ("cloudevents", {"title": "CloudEvents 1.0 (subset)", "type": "object", "properties": {
        "specversion": {"const": "1.0"}, "id": {"type": "string", "format": "uuid"},
        "source": {"type": "string", "format": "uri-reference"},
        "type": {"type": "string", "pattern": "^com\\.example\\.[a-z]{1,10}$"},
        "time": {"type": "string", "format": "date-time"},
        "datacontenttype": {"enum": ["application/json", "text/plain"]},
        "data": {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 2}},
        "required": ["specversion", "id", "source", "type"], "additionalProperties": False}),
    ("json_feed_item", {"title": "JSON Feed item", "type": "object", "properties": {
        "id": {"type": "string", "maxLength": 12}, "url": {"type": "string", "format": "uri"},
        "title": {"type": "string", "maxLength": 40}, "content_text": {"type": "string", "maxLength": 60},
        "date_published": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 10}, "maxItems": 3}},
        "required": ["id"], "additionalProperties": False}),
    ("oauth_token_response", {"type": "object", "properties": {
        "access_token": {"type": "string", "pattern": "^[A-Za-z0-9_-]{16,32}$"},
        "token_type": {"enum": ["Bearer", "bearer"]}, "expires_in": {"type": "integer", "minimum": 1, "maximum": 86400},
        "refresh_token": {"type": "string", "pattern": "^[A-Za-z0-9_-]{16,32}$"},
        "scope": {"type": "string", "pattern": "^[a-z:]{1,12}( [a-z:]{1,12}){0,2}$"}},
        "required": ["access_token", "token_type", "expires_in"], "additionalProperties": False}),
    ("jwt_claims", {"type": "object", "properties": {
        "iss": {"type": "string", "format": "uri"}, "sub": {"type": "string", "maxLength": 20},
        "aud": {"anyOf": [{"type": "string", "maxLength": 16}, {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 2}]},
        "exp": {"type": "integer", "minimum": 1600000000, "maximum": 2000000000},
        "iat": {"type": "integer", "minimum": 1600000000, "maximum": 2000000000}},
        "required": ["iss", "sub", "exp"], "additionalProperties": False}),
    ("k8s_pod_metadata", {"title": "Kubernetes ObjectMeta (subset)", "type": "object", "properties": {
        "apiVersion": {"const": "v1"}, "kind": {"const": "Pod"},
        "metadata": {"type": "object", "properties": {
            "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$"},
            "namespace": {"type": "string", "pattern": "^[a-z0-9-]{1,16}$"},
            "labels": {"type": "object", "maxProperties": 2, "additionalProperties": {"type": "string", "pattern": "^[a-z0-9-]{0,16}$"}}},
            "required": ["name"], "additionalProperties": False},
        "spec": {"type": "object", "properties": {"containers": {"type": "array", "minItems": 1, "maxItems": 1, "items": {
            "type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z-]{1,12}$"},
                                             "image": {"type": "string", "pattern": "^[a-z]{1,10}:[0-9.]{1,6}$"},
                                             "ports": {"type": "array", "maxItems": 1, "items": {
                                                 "type": "object", "properties": {"containerPort": {"type": "integer", "minimum": 1, "maximum": 65535}},
                                                 "required": ["containerPort"], "additionalProperties": False}}},
            "required": ["name", "image"], "additionalProperties": False}}},
            "required": ["containers"], "additionalProperties": False}},
        "required": ["apiVersion", "kind", "metadata", "spec"], "additionalProperties": False}),
    # recursion and references
    ("recursive_root_ref", {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 8}, "children": {"type": "array", "items": {"$ref": "#"}, "maxItems": 2}},
        "required": ["name", "children"], "additionalProperties": False}),
    ("recursive_json_value", {"$defs": {"value": {"anyOf": [
        {"type": "null"}, {"type": "boolean"}, {"type": "integer", "minimum": -99, "maximum": 99},
        {"type": "string", "maxLength": 8},
        {"type": "array", "items": {"$ref": "#/$defs/value"}, "maxItems": 2},
        {"type": "object", "additionalProperties": {"$ref": "#/$defs/value"}, "maxProperties": 2}]}},
        "$ref": "#/$defs/value"}),
    ("recursive_mutual", {"$defs": {
        "a": {"type": "object", "properties": {"b": {"anyOf": [{"$ref": "#/$defs/b"}, {"type": "null"}]}}, "required": ["b"],
              "additionalProperties": False},
        "b": {"type": "object", "properties": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]},
                                              "n": {"type": "integer", "minimum": 0, "maximum": 9}},
              "required": ["a", "n"], "additionalProperties": False}},
        "$ref": "#/$defs/a"}),
    ("ref_with_escaped_pointer", {"$defs": {"a/b": {"type": "integer", "minimum": 0, "maximum": 5},
                                            "c~d": {"type": "string", "maxLength": 5}},
                                  "type": "object", "properties": {"x": {"$ref": "#/$defs/a~1b"}, "y": {"$ref": "#/$defs/c~0d"}},
                                  "required": ["x", "y"], "additionalProperties": False}),
    # top-level shapes and edge keywords
    ("top_array_of_ints", {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 100},
                           "minItems": 1, "maxItems": 5}),
    ("top_enum_mixed", {"enum": ["red", 1, 2.5, True, None, "blue"]}),
    ("top_const_object", {"const": {"ok": True, "n": 1}}),
    ("top_string_date", {"type": "string", "format": "date"}),
    ("top_number_exclusive", {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}),
    ("top_integer_negative_range", {"type": "integer", "minimum": -1000, "maximum": -10}),
    ("top_integer_multiple_of", {"type": "integer", "multipleOf": 7}),
    ("integer_multiple_of_fields", {"type": "object", "properties": {
        "price_cents": {"type": "integer", "multipleOf": 1000},
        "step": {"type": "integer", "multipleOf": 3},
        "offset": {"type": ["integer", "null"], "multipleOf": 4}},
        "required": ["price_cents", "step"], "additionalProperties": False}),
    ("integer_multiple_of_beside_range", {"type": "object", "properties": {
        "page_size": {"type": "integer", "multipleOf": 10},
        "page": {"type": "integer", "minimum": 1, "maximum": 50}},
        "required": ["page_size", "page"], "additionalProperties": False}),
    ("top_boolean", {"type": "boolean"}),
    ("top_null_or_string", {"type": ["null", "string"], "maxLength": 10}),
    ("top_empty_schema", {}),
    ("tuple_prefix_items_closed", {"type": "array", "prefixItems": [
        {"type": "string", "maxLength": 6}, {"type": "integer"}, {"type": "boolean"}], "items": False}),
    ("tuple_prefix_items_open", {"type": "array", "prefixItems": [{"const": "head"}],
                                 "items": {"type": "integer", "minimum": 0, "maximum": 9}, "maxItems": 4}),
    ("pattern_optional_suffix", {"title": "image reference", "type": "object", "properties": {
        "image": {"type": "string", "pattern": "^[a-z]{1,8}(:[0-9]{1,3})?$"},
        "digest": {"type": "string", "pattern": "^sha256(:[0-9a-f]{4,8})?$"}},
        "required": ["image", "digest"], "additionalProperties": False}),
    ("pattern_properties", {"type": "object", "patternProperties": {
        "^x-[a-z]{1,8}$": {"type": "string", "maxLength": 10}, "^n_[0-9]{1,3}$": {"type": "integer"}},
        "additionalProperties": False, "maxProperties": 3}),
    ("additional_properties_schema", {"type": "object", "properties": {"id": {"type": "integer"}},
                                      "required": ["id"],
                                      "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1}}),
    ("min_max_properties", {"type": "object", "additionalProperties": {"type": "integer"},
                            "minProperties": 1, "maxProperties": 2}),
    ("unevaluated_properties_false", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 4}},
                                      "required": ["a"], "unevaluatedProperties": False}),
    ("property_names_pattern", {"type": "object", "propertyNames": {"pattern": "^[a-z]{1,6}$"},
                                "additionalProperties": {"type": "boolean"}, "maxProperties": 3}),
    ("oneof_overlapping_numbers", {"type": "object", "properties": {
        "amount": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0.5}]}},
        "required": ["amount"], "additionalProperties": False}),
    ("anyof_nested", {"anyOf": [
        {"type": "object", "properties": {"kind": {"const": "a"}, "v": {"type": "integer"}}, "required": ["kind", "v"],
         "additionalProperties": False},
        {"type": "object", "properties": {"kind": {"const": "b"}, "v": {"anyOf": [{"type": "string", "maxLength": 4},
                                                                                   {"type": "null"}]}},
         "required": ["kind", "v"], "additionalProperties": False}]}),
    ("string_formats_all", {"type": "object", "properties": {
        "email": {"type": "string", "format": "email"}, "date": {"type": "string", "format": "date"},
        "time": {"type": "string", "format": "time"}, "date_time": {"type": "string", "format": "date-time"},
        "duration": {"type": "string", "format": "duration"}, "ipv4": {"type": "string", "format": "ipv4"},
        "ipv6": {"type": "string", "format": "ipv6"}, "hostname": {"type": "string", "format": "hostname"},
        "uuid": {"type": "string", "format": "uuid"}},
        "required": ["email", "date", "time", "date_time", "duration", "ipv4", "ipv6", "hostname", "uuid"],
        "additionalProperties": False}),
    ("string_formats_uris", {"type": "object", "properties": {
        "uri": {"type": "string", "format": "uri"}, "uri_reference": {"type": "string", "format": "uri-reference"},
        "uri_template": {"type": "string", "format": "uri-template"},
        "json_pointer": {"type": "string", "format": "json-pointer"},
        "relative_json_pointer": {"type": "string", "format": "relative-json-pointer"}},
        "required": ["uri", "uri_reference", "uri_template", "json_pointer", "relative_json_pointer"],
        "additionalProperties": False}),
    ("string_format_annotation_only", {"type": "object", "properties": {
        "color": {"type": "string", "format": "color", "maxLength": 7},
        "password": {"type": "string", "format": "password", "minLength": 8, "maxLength": 12}},
        "required": ["color", "password"], "additionalProperties": False}),
    ("string_escapes_and_unicode", {"type": "object", "properties": {
        "quote": {"type": "string", "maxLength": 6}, "path": {"type": "string", "pattern": "^[A-Z]:\\\\[a-z]{1,6}$"},
        "emoji": {"enum": ["✓", "✗", "“quoted”", "tab\there", "new\nline"]}},
        "required": ["quote", "path", "emoji"], "additionalProperties": False}),
    ("numbers_float_bounds", {"type": "object", "properties": {
        "p": {"type": "number", "minimum": 0.25, "maximum": 0.75},
        "q": {"type": "number", "exclusiveMinimum": -1.5, "exclusiveMaximum": 1.5},
        "r": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}},
        "required": ["p", "q", "r"], "additionalProperties": False}),
    ("arrays_nested_bounds", {"type": "array", "minItems": 1, "maxItems": 2, "items": {
        "type": "array", "minItems": 2, "maxItems": 3, "items": {"enum": ["x", "o", " "]}}}),
    ("required_all_declared", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}},
                               "required": ["a", "b"], "additionalProperties": {"type": "boolean"}}),
    ("description_heavy", {"title": "Described", "description": "Every field documented, as generated by tools.",
                           "type": "object", "properties": {
                               "id": {"description": "Identifier", "type": "integer", "examples": [1, 2], "default": 1,
                                      "minimum": 1, "maximum": 1000},
                               "label": {"description": "Label", "type": "string", "maxLength": 10, "deprecated": True,
                                         "readOnly": True}},
                           "required": ["id", "label"], "additionalProperties": False, "$comment": "comment"}),
]

# ---------------------------------------------------------------------------------------------
# Schemas the engine must refuse, with the keyword its message names
# ---------------------------------------------------------------------------------------------


class TagSet(BaseModel):
    tags: set[str]


class FrozenCodes(BaseModel):
    codes: frozenset[conint(ge=0, le=9)]


class HalfSteps(BaseModel):
    value: Annotated[float, Field(multiple_of=0.5)]


class Site(BaseModel):
    homepage: AnyUrl


class Crawl(BaseModel):
    pages: conlist(HttpUrl, max_length=2)


class SkuWithLength(BaseModel):
    sku: constr(pattern=r"^[A-Z]{3}[0-9]+$", max_length=8)


REFUSED: list[tuple[str, Any, str]] = [
    ("refused_not", {"type": "object", "properties": {"a": {"type": "integer", "not": {"const": 0}}}}, "not"),
    ("refused_not_top", {"not": {"type": "null"}}, "not"),
    ("refused_if_then_else", {"type": "object", "properties": {"country": {"enum": ["US", "FR"]}, "zip": {"type": "string"}},
                              "if": {"properties": {"country": {"const": "US"}}},
                              "then": {"properties": {"zip": {"pattern": "^[0-9]{5}$"}}},
                              "else": {"properties": {"zip": {"pattern": "^[0-9]{4,5}$"}}}}, "if"),
    ("refused_then_alone", {"type": "object", "then": {"required": ["a"]}}, "then"),
    ("refused_else_alone", {"type": "object", "else": {"required": ["a"]}}, "else"),
    ("refused_dependent_required", {"type": "object", "properties": {"card": {"type": "string"}, "billing": {"type": "string"}},
                                    "dependentRequired": {"card": ["billing"]}}, "dependentRequired"),
    ("refused_dependent_schemas", {"type": "object", "properties": {"card": {"type": "string"}},
                                   "dependentSchemas": {"card": {"required": ["billing"]}}}, "dependentSchemas"),
    ("refused_contains", {"type": "array", "items": {"type": "integer"}, "contains": {"const": 7}}, "contains"),
    ("refused_min_contains", {"type": "array", "items": {"type": "integer"}, "minContains": 2}, "minContains"),
    ("refused_max_contains", {"type": "object", "properties": {"a": {"type": "array", "maxContains": 1}}}, "maxContains"),
    ("refused_unique_items", {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, "uniqueItems"),
    ("refused_pydantic_set", TagSet, "uniqueItems"),
    ("refused_pydantic_frozenset", FrozenCodes, "uniqueItems"),
    ("refused_multiple_of_number", {"type": "number", "multipleOf": 0.01}, "multipleOf"),
    ("refused_multiple_of_untyped", {"type": "object", "properties": {"n": {"multipleOf": 3}}}, "multipleOf"),
    ("refused_pydantic_float_multiple_of", HalfSteps, "multipleOf"),
    ("refused_pydantic_int_multiple_of_range", BankTransaction, "multipleOf"),
    ("refused_integer_multiple_of_range", {"type": "integer", "multipleOf": 7, "minimum": 0, "maximum": 100}, "multipleOf"),
    ("refused_integer_multiple_of_wide_range", {"type": "object", "properties": {
        "price_cents": {"type": "integer", "multipleOf": 1000, "minimum": 1000, "maximum": 1000000},
        "step": {"type": "integer", "multipleOf": 3}},
        "required": ["price_cents", "step"], "additionalProperties": False}, "multipleOf"),
    ("refused_integer_multiple_of_exclusive", {"type": "object", "properties": {
        "n": {"type": ["integer", "null"], "multipleOf": 2, "exclusiveMinimum": 0}}}, "multipleOf"),
    ("refused_required_undeclared", {"type": "object", "properties": {"a": {"type": "integer"}},
                                     "required": ["a", "b"], "additionalProperties": {"type": "boolean"}}, "required"),
    ("refused_required_no_properties", {"type": "object", "required": ["id"]}, "required"),
    ("refused_required_nested_def", {"$defs": {"item": {"type": "object", "properties": {"sku": {"type": "string"}},
                                                        "required": ["sku", "qty"]}},
                                     "type": "array", "items": {"$ref": "#/$defs/item"}, "maxItems": 3}, "required"),
    ("refused_all_of_two", {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}},
                                      {"type": "object", "properties": {"b": {"type": "integer"}}}]}, "allOf"),
    ("refused_all_of_nested", {"$defs": {"x": {"allOf": [{"type": "integer"}, {"minimum": 0}]}},
                               "type": "object", "properties": {"v": {"$ref": "#/$defs/x"}}}, "allOf"),
    ("refused_ref_url", {"type": "object", "properties": {"geo": {"$ref": "https://geojson.org/schema/Point.json"}}}, "$ref"),
    ("refused_ref_relative_file", {"type": "array", "items": {"$ref": "definitions.json#/Address"}}, "$ref"),
    ("refused_length_with_pattern", {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5}, "minLength/maxLength"),
    ("refused_pydantic_constr_pattern_length", SkuWithLength, "minLength/maxLength"),
    ("refused_length_with_format_email", {"type": "object", "properties": {
        "email": {"type": "string", "format": "email", "maxLength": 64}}}, "minLength/maxLength"),
    ("refused_pydantic_any_url", Site, "minLength/maxLength"),
    ("refused_pydantic_http_url", Crawl, "minLength/maxLength"),
    ("refused_length_with_format_date", {"type": "string", "format": "date", "minLength": 10}, "minLength/maxLength"),
]

# ---------------------------------------------------------------------------------------------
# Regexes (Python re and xgrammar alike: no lookarounds, no backreferences)
# ---------------------------------------------------------------------------------------------

REGEXES: list[tuple[str, str]] = [
    ("digits", r"[0-9]+"),
    ("signed_int", r"-?(0|[1-9][0-9]{0,8})"),
    ("decimal", r"-?[0-9]{1,4}\.[0-9]{1,3}"),
    ("scientific", r"[+-]?[0-9]\.[0-9]{1,4}[eE][+-]?[0-9]{1,2}"),
    ("hex_color", r"#[0-9a-fA-F]{6}"),
    ("hex_color_short_or_long", r"#([0-9a-f]{3}|[0-9a-f]{6})"),
    ("time_24h", r"([01][0-9]|2[0-3]):[0-5][0-9]"),
    ("time_12h", r"(0?[1-9]|1[0-2]):[0-5][0-9] ?(AM|PM)"),
    ("iso_date", r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"),
    ("us_phone", r"\([0-9]{3}\) [0-9]{3}-[0-9]{4}"),
    ("intl_phone", r"\+[1-9][0-9]{7,12}"),
    ("email_simple", r"[a-z0-9._%+-]{1,16}@[a-z0-9-]{1,12}\.(com|org|net|io)"),
    ("ipv4_octets", r"((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"),
    ("mac_address", r"([0-9A-F]{2}-){5}[0-9A-F]{2}"),
    ("uuid_v4", r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"),
    ("semver", r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z]{1,8})?"),
    ("zip_plus4", r"[0-9]{5}(-[0-9]{4})?"),
    ("uk_postcode", r"[A-Z]{1,2}[0-9][A-Z0-9]? [0-9][A-Z]{2}"),
    ("iban_like", r"[A-Z]{2}[0-9]{2}[A-Z0-9]{11,20}"),
    ("credit_card_groups", r"[0-9]{4}( [0-9]{4}){3}"),
    ("yes_no", r"(yes|no)"),
    ("yes_no_maybe_case", r"(Yes|No|Maybe)[.!]?"),
    ("bool_word", r"(true|false)"),
    ("sentence", r"[A-Z][a-z]{1,10}( [a-z]{1,10}){2,6}\."),
    ("word_list", r"[a-z]{2,8}(, [a-z]{2,8}){1,4}"),
    ("identifier", r"[A-Za-z_][A-Za-z0-9_]{0,15}"),
    ("snake_case", r"[a-z]+(_[a-z]+){0,3}"),
    ("camel_case", r"[a-z]+([A-Z][a-z]+){1,3}"),
    ("kebab_case", r"[a-z]+(-[a-z]+){1,3}"),
    ("url_simple", r"https?://[a-z0-9-]{1,12}\.(com|org|dev)(/[a-z0-9_-]{1,8}){0,3}"),
    ("unix_path", r"(/[a-z0-9._-]{1,8}){1,4}/?"),
    ("windows_path", r"[A-Z]:\\([A-Za-z0-9_]{1,8}\\){0,3}[A-Za-z0-9_]{1,8}\.(txt|exe|dll)"),
    ("key_value_pairs", r"[a-z]{1,6}=[0-9]{1,3}(&[a-z]{1,6}=[0-9]{1,3}){0,3}"),
    ("csv_row", r"[a-z]{1,6},[0-9]{1,4},(true|false)"),
    ("quoted_string", r"\"[^\"\\\n]{0,20}\""),
    ("markdown_heading", r"#{1,3} [A-Z][a-z]{1,10}( [a-z]{1,10}){0,3}"),
    ("html_tag", r"<(div|span|p)( class=\"[a-z]{1,8}\")?>[a-z ]{0,20}</(div|span|p)>"),
    ("sql_select", r"SELECT [a-z_]{1,8}(, [a-z_]{1,8}){0,2} FROM [a-z_]{1,10}( WHERE [a-z_]{1,8} = [0-9]{1,4})?;"),
    ("arith_expr_flat", r"[0-9]{1,3}( [-+*/] [0-9]{1,3}){1,4}"),
    ("roman_numeral", r"M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})"),
    ("chess_move", r"([KQRBN]?[a-h][1-8]|O-O(-O)?)[+#]?"),
    ("dna_sequence", r"[ACGT]{10,30}"),
    ("binary_string", r"[01]{8}( [01]{8}){0,3}"),
    ("version_tag", r"v[0-9]+\.[0-9]+(\.[0-9]+)?(-(alpha|beta|rc)\.[0-9]+)?"),
    ("currency_amount", r"\$[1-9][0-9]{0,2}(,[0-9]{3}){0,2}\.[0-9]{2}"),
    ("percentage", r"(100|[1-9]?[0-9])(\.[0-9]{1,2})?%"),
    ("temperature", r"-?[0-9]{1,2}(\.[0-9])? ?°[CF]"),
    ("json_like_pair", r"\{\"[a-z]{1,8}\": [0-9]{1,5}\}"),
    ("shorthand_classes", r"\d{2,4}-\w{2,6}\s\d{1,3}"),
    ("dot_any", r"Note: .{1,20}!"),
    ("negated_class", r"\[[^\]\n]{1,15}\]"),
    ("alternation_words", r"(the|a|an) (red|green|blue) (cat|dog|bird)"),
    ("optional_nested", r"a(b(c(d)?)?)?"),
    ("anchored", r"^[A-Z]{3}-[0-9]{3}$"),
    ("non_capturing_group", r"(?:ab|cd){1,3}x"),
    ("unicode_letters", r"[α-ω]{2,6}( [А-Яа-я]{2,6})?"),
]

# ---------------------------------------------------------------------------------------------
# Grammars (xgrammar EBNF). check: a Python regex for the (regular) language, or None
# ---------------------------------------------------------------------------------------------

GRAMMARS: list[tuple[str, str, Optional[str]]] = [
    ("yes_no", 'root ::= "yes" | "no"', r"yes|no"),
    ("digits_plus", 'root ::= [0-9]+', r"[0-9]+"),
    ("bounded_repeat", 'root ::= [a-z]{2,5} "-" [0-9]{3}', r"[a-z]{2,5}-[0-9]{3}"),
    ("csv_ints", 'root ::= int ("," int)*\nint ::= "0" | [1-9] [0-9]{0,3}', r"(0|[1-9][0-9]{0,3})(,(0|[1-9][0-9]{0,3}))*"),
    ("key_value_lines", 'root ::= line{1,3}\nline ::= key "=" value "\\n"\nkey ::= [a-z]+\nvalue ::= [0-9]+ | "\\"" [a-z ]* "\\""',
     r'([a-z]+=([0-9]+|"[a-z ]*")\n){1,3}'),
    ("ip_address", 'root ::= octet "." octet "." octet "." octet\noctet ::= "25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9]? [0-9]',
     r"((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"),
    ("greeting", 'root ::= greeting " " name punct\ngreeting ::= "Hello" | "Hi" | "Good morning"\nname ::= [A-Z] [a-z]{1,8}\npunct ::= "!" | "."',
     r"(Hello|Hi|Good morning) [A-Z][a-z]{1,8}[!.]"),
    ("date_iso", 'root ::= year "-" month "-" day\nyear ::= [12] [0-9]{3}\nmonth ::= "0" [1-9] | "1" [0-2]\nday ::= "0" [1-9] | [12] [0-9] | "3" [01]',
     r"[12][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"),
    ("sql_select", 'root ::= "SELECT " cols " FROM " ident where? ";"\ncols ::= "*" | ident (", " ident)*\n'
                   'ident ::= [a-z_] [a-z0-9_]{0,9}\nwhere ::= " WHERE " ident " = " [0-9]+',
     r"SELECT (\*|[a-z_][a-z0-9_]{0,9}(, [a-z_][a-z0-9_]{0,9})*) FROM [a-z_][a-z0-9_]{0,9}( WHERE [a-z_][a-z0-9_]{0,9} = [0-9]+)?;"),
    ("comment_and_escapes", '# a comment line\nroot ::= "\\t" [^\\n"]{0,10} "\\u00e9"  # trailing comment', "\t[^\n\"]{0,10}\u00e9"),
    ("char_class_negation", 'root ::= "<" [^<>]* ">"', r"<[^<>]*>"),
    ("list_of_words", 'root ::= "[" (word (", " word)*)? "]"\nword ::= "\\"" [a-z]{1,8} "\\""',
     r'\[("[a-z]{1,8}"(, "[a-z]{1,8}")*)?\]'),
    ("email", 'root ::= local "@" domain\nlocal ::= [a-z0-9._]{1,12}\ndomain ::= [a-z]{2,10} ("." [a-z]{2,6}){1,2}',
     r"[a-z0-9._]{1,12}@[a-z]{2,10}(\.[a-z]{2,6}){1,2}"),
    # not regular: recognizers in tests/python/test_structured_corpus.py
    ("balanced_parens", 'root ::= pair+\npair ::= "(" pair* ")"', None),
    ("arith_expr", 'root ::= expr\nexpr ::= term (("+" | "-") term)*\nterm ::= factor (("*" | "/") factor)*\n'
                   'factor ::= [0-9]{1,3} | "(" expr ")"', None),
    ("nested_int_lists", 'root ::= list\nlist ::= "[" (item ("," item)*)? "]"\nitem ::= list | [0-9]', None),
    ("s_expression", 'root ::= sexp\nsexp ::= atom | "(" sexp (" " sexp)* ")"\natom ::= [a-z]{1,6} | [0-9]{1,3}', None),
    ("a_n_b_n", 'root ::= "a" root "b" | "ab"', None),
    ("json_array_of_objects", 'root ::= "[" (obj ("," obj)*)? "]"\nobj ::= "{\\"id\\":" [0-9]{1,4} ",\\"tags\\":" tags "}"\n'
                              'tags ::= "[" (str ("," str)*)? "]"\nstr ::= "\\"" [a-z]{0,6} "\\""', None),
    ("xml_nested", 'root ::= elem\nelem ::= "<a>" (elem | text)* "</a>" | "<b>" (elem | text)* "</b>"\ntext ::= [a-z]{1,5}', None),
    ("palindrome_abc", 'root ::= "a" root "a" | "b" root "b" | "c" root "c" | [abc] | ""', None),
]


# ---------------------------------------------------------------------------------------------


def schema_of(model_or_schema: Any) -> dict:
    if isinstance(model_or_schema, dict):
        return model_or_schema
    return model_or_schema.model_json_schema()


FORMATS = {"email", "date", "time", "date-time", "duration", "ipv4", "ipv6", "hostname", "uuid", "uri",
           "uri-reference", "uri-template", "json-pointer", "relative-json-pointer"}


def refused_keyword(s: Any) -> Optional[str]:
    """A Python mirror of src/structured/json_schema_check.cc, to check the corpus's labels."""
    if not isinstance(s, dict):
        return None
    for k in ("not", "if", "then", "else", "contains", "minContains", "maxContains", "dependentRequired",
              "dependentSchemas"):
        if k in s:
            return k
    if "uniqueItems" in s and s["uniqueItems"] is not False:
        return "uniqueItems"
    t = s.get("type")
    if "multipleOf" in s:
        if not (t == "integer" or (isinstance(t, list) and "integer" in t)):
            return "multipleOf"
        if any(b in s for b in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
            return "multipleOf"  # xgrammar drops an integer multipleOf next to a range
    if isinstance(s.get("required"), list):
        props = s.get("properties")
        for r in s["required"]:
            if isinstance(r, str) and not (isinstance(props, dict) and r in props):
                return "required"  # a name "properties" does not declare
    if isinstance(s.get("allOf"), list) and len(s["allOf"]) > 1:
        return "allOf"
    ref = s.get("$ref")
    if isinstance(ref, str) and ref != "#" and not ref.startswith("#/"):
        return "$ref"
    length = "minLength" in s or "maxLength" in s
    if length and (s.get("format") in FORMATS or "pattern" in s):
        return "minLength/maxLength"
    subs = []
    for m in ("properties", "patternProperties", "$defs", "definitions"):
        if isinstance(s.get(m), dict):
            subs += list(s[m].values())
    for m in ("anyOf", "oneOf", "allOf", "prefixItems"):
        if isinstance(s.get(m), list):
            subs += s[m]
    for m in ("items", "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "propertyNames"):
        if m in s:
            subs.append(s[m])
    for sub in subs:
        if (k := refused_keyword(sub)) is not None:
            return k
    return None


def corpus() -> tuple[list[dict], list[dict], list[dict]]:
    schemas = []
    for name, model in PYDANTIC_MODELS + GENERIC_MODELS:
        schemas.append({"name": "pydantic_" + name, "schema": schema_of(model), "refused": None})
    for name, schema in HANDWRITTEN:
        schemas.append({"name": name, "schema": schema, "refused": None})
    for name, model, keyword in REFUSED:
        schemas.append({"name": name, "schema": schema_of(model), "refused": keyword})
    names = [s["name"] for s in schemas]
    assert len(names) == len(set(names)), "duplicate schema names"
    for s in schemas:
        got = refused_keyword(s["schema"])
        assert got == s["refused"], (s["name"], got, s["refused"])
        json.dumps(s["schema"], allow_nan=False)
    regexes = [{"name": n, "regex": r} for n, r in REGEXES]
    for r in regexes:
        re.compile(r["regex"])
        assert "(?=" not in r["regex"] and "(?!" not in r["regex"] and "(?<" not in r["regex"], r["name"]
    grammars = [{"name": n, "grammar": g, "check": c} for n, g, c in GRAMMARS]
    for g in grammars:
        if g["check"] is not None:
            re.compile(g["check"])
    assert len({r["name"] for r in regexes}) == len(regexes) and len({g["name"] for g in grammars}) == len(grammars)
    return schemas, regexes, grammars


def write_jsonl(path: str, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "structured"))
    args = ap.parse_args()
    schemas, regexes, grammars = corpus()
    os.makedirs(args.out, exist_ok=True)
    write_jsonl(os.path.join(args.out, "json_schemas.jsonl"), schemas)
    write_jsonl(os.path.join(args.out, "regexes.jsonl"), regexes)
    write_jsonl(os.path.join(args.out, "grammars.jsonl"), grammars)
    refused = sum(s["refused"] is not None for s in schemas)
    print(f"{len(schemas)} schemas ({len(schemas) - refused} enforced, {refused} refused; "
          f"{len(PYDANTIC_MODELS) + len(GENERIC_MODELS)} from pydantic {pydantic.VERSION}), "
          f"{len(regexes)} regexes, {len(grammars)} grammars -> {os.path.relpath(args.out, REPO)}")


if __name__ == "__main__":
    main()
