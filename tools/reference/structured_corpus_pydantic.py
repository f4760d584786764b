"""Pydantic v2 models for the structured-outputs corpus: typical application payloads (PYDANTIC_MODELS)."""

from __future__ import annotations

import datetime as dt
import decimal  # noqa: F401  (Decimal's pattern has a lookahead: kept out of the corpus, see README)
import enum
import uuid
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, conint, conlist, constr
from pydantic.networks import IPv4Address, IPv6Address

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
