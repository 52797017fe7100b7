"""A small labelled set of real-looking changes, each with the description its author wrote.

Pairing a change with its own description gives a *matching* pair; pairing it with the description of the
change ``SHIFT`` places further on gives a *mismatched* pair (a PR that says it does one thing and does
another). The calibration in ``rubric.json`` (``rationale.calibration``) and the numbers in docs/rationale.md
come from this set (``python -m tests.rationale.calibrate``).
"""

from __future__ import annotations

from typing import TypedDict


class LabelledChange(TypedDict):
    id: str
    title: str
    body: str
    files: dict[str, str]


SHIFT = 7

CHANGES: list[LabelledChange] = [
    {
        "id": "login-rate-limit",
        "title": "Rate-limit failed login attempts",
        "body": "Brute-force protection: after 5 failed logins from the same IP within 10 minutes the login "
                "endpoint answers 429 until the window expires. Counts live in the existing cache.",
        "files": {"auth/throttle.py": '''"""Throttle repeated failed logins per client address."""

import time

MAX_FAILURES = 5
WINDOW_SECONDS = 600


class LoginThrottle:
    def __init__(self, cache):
        self.cache = cache

    def _key(self, ip_address):
        return f"login-failures:{ip_address}"

    def record_failure(self, ip_address):
        key = self._key(ip_address)
        failures = [t for t in self.cache.get(key, []) if t > time.time() - WINDOW_SECONDS]
        failures.append(time.time())
        self.cache.set(key, failures, timeout=WINDOW_SECONDS)

    def is_blocked(self, ip_address):
        recent = [t for t in self.cache.get(self._key(ip_address), []) if t > time.time() - WINDOW_SECONDS]
        return len(recent) >= MAX_FAILURES

    def reset(self, ip_address):
        self.cache.delete(self._key(ip_address))
'''},
    },
    {
        "id": "pagination-off-by-one",
        "title": "Fix last page missing from paginated results",
        "body": "The page count used floor division, so when the number of items was not a multiple of the page "
                "size the final partial page was never returned. Use ceiling division and add a test.",
        "files": {"api/pagination.py": '''def page_count(total_items, page_size):
    """Number of pages needed to show every item, including a final partial page."""
    if page_size <= 0:
        raise ValueError("page_size must be positive")
    return (total_items + page_size - 1) // page_size


def page_slice(items, page, page_size):
    """Items shown on 1-based ``page``."""
    start = (page - 1) * page_size
    return items[start:start + page_size]
''', "tests/test_pagination.py": '''from api.pagination import page_count


def test_partial_last_page_is_counted():
    assert page_count(21, 10) == 3
    assert page_count(20, 10) == 2
'''},
    },
    {
        "id": "orders-csv-export",
        "title": "Export orders as CSV",
        "body": "Adds a download button on the orders admin page that exports the filtered orders to a CSV file "
                "with order number, customer, date, status and total.",
        "files": {"shop/export.py": '''import csv
import io

COLUMNS = ["order_number", "customer", "created_at", "status", "total"]


def orders_to_csv(orders):
    """Serialise orders to CSV text with a header row."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS)
    writer.writeheader()
    for order in orders:
        writer.writerow({
            "order_number": order.number,
            "customer": order.customer.full_name,
            "created_at": order.created_at.isoformat(),
            "status": order.status,
            "total": f"{order.total:.2f}",
        })
    return buffer.getvalue()


def export_response(orders):
    body = orders_to_csv(orders)
    headers = {"Content-Disposition": "attachment; filename=orders.csv", "Content-Type": "text/csv"}
    return body, headers
'''},
    },
    {
        "id": "avatar-thumbnail-cache",
        "title": "Cache resized avatar thumbnails",
        "body": "Profile pages resized every avatar on each request. Store generated thumbnails on disk keyed by "
                "user id and size, and reuse them until the user uploads a new avatar.",
        "files": {"profiles/avatars.py": '''from pathlib import Path

THUMBNAIL_DIR = Path("media/thumbnails")


def thumbnail_path(user_id, size):
    return THUMBNAIL_DIR / f"{user_id}-{size}.png"


def get_thumbnail(user, size, resize):
    """Return the cached thumbnail for ``user``, generating it once per avatar upload."""
    path = thumbnail_path(user.id, size)
    if path.exists() and path.stat().st_mtime >= user.avatar_updated_at.timestamp():
        return path.read_bytes()
    data = resize(user.avatar_bytes, size)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def invalidate_thumbnails(user_id):
    for cached in THUMBNAIL_DIR.glob(f"{user_id}-*.png"):
        cached.unlink()
'''},
    },
    {
        "id": "webhook-retry-backoff",
        "title": "Retry failed webhook deliveries with exponential backoff",
        "body": "Outgoing webhooks were dropped after a single failure. Retry up to 6 times with exponential "
                "backoff and jitter, then mark the delivery as failed so it shows up in the dashboard.",
        "files": {"hooks/delivery.py": '''import random

MAX_ATTEMPTS = 6
BASE_DELAY = 2.0


def backoff_delay(attempt):
    """Seconds to wait before retry number ``attempt``: exponential with full jitter."""
    return random.uniform(0, BASE_DELAY * 2 ** attempt)


def deliver_with_retry(send, delivery, sleep):
    for attempt in range(MAX_ATTEMPTS):
        response = send(delivery.url, delivery.payload)
        if 200 <= response.status_code < 300:
            delivery.mark_delivered()
            return True
        sleep(backoff_delay(attempt))
    delivery.mark_failed(reason=f"gave up after {MAX_ATTEMPTS} attempts")
    return False
'''},
    },
    {
        "id": "signup-email-validation",
        "title": "Validate email addresses on sign-up",
        "body": "Reject malformed email addresses in the registration form and normalise the domain to lower "
                "case so the same address cannot register twice with different capitalisation.",
        "files": {"accounts/validators.py": '''import re

EMAIL_PATTERN = re.compile(r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}$")


class InvalidEmail(ValueError):
    pass


def normalise_email(address):
    """Validate an email address and lower-case its domain."""
    address = address.strip()
    if not EMAIL_PATTERN.match(address):
        raise InvalidEmail(f"not a valid email address: {address!r}")
    local, domain = address.rsplit("@", 1)
    return f"{local}@{domain.lower()}"


def validate_registration(form):
    form["email"] = normalise_email(form["email"])
    return form
'''},
    },
    {
        "id": "dark-mode-toggle",
        "title": "Add a dark mode toggle to the settings page",
        "body": "Users can switch between light and dark themes from Settings. The choice is saved in local "
                "storage and applied on load; the default follows the operating system preference.",
        "files": {"web/src/theme.js": '''const STORAGE_KEY = "theme";

export function preferredTheme() {
  const saved = window.localStorage.getItem(STORAGE_KEY);
  if (saved === "dark" || saved === "light") {
    return saved;
  }
  return window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

export function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
}

export function toggleTheme() {
  const next = preferredTheme() === "dark" ? "light" : "dark";
  window.localStorage.setItem(STORAGE_KEY, next);
  applyTheme(next);
  return next;
}
'''},
    },
    {
        "id": "search-debounce",
        "title": "Debounce the product search box",
        "body": "Typing in the search box fired one API request per keystroke. Wait until the user pauses for "
                "300 ms before querying, and cancel the previous in-flight request.",
        "files": {"web/src/search.js": '''export function debounce(fn, waitMs) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), waitMs);
  };
}

let controller = null;

async function searchProducts(query) {
  if (controller) {
    controller.abort();
  }
  controller = new AbortController();
  const response = await fetch(`/api/products?q=${encodeURIComponent(query)}`, { signal: controller.signal });
  return response.json();
}

export const onSearchInput = debounce((event) => searchProducts(event.target.value), 300);
'''},
    },
    {
        "id": "iso8601-durations",
        "title": "Parse ISO 8601 durations in schedule files",
        "body": "Schedules can now say `every: PT15M` or `P1DT2H` instead of a number of seconds. Adds a small "
                "parser for ISO 8601 durations (days, hours, minutes, seconds).",
        "files": {"scheduler/durations.py": '''import re
from datetime import timedelta

DURATION_RE = re.compile(
    r"^P(?:(?P<days>\\d+)D)?"
    r"(?:T(?:(?P<hours>\\d+)H)?(?:(?P<minutes>\\d+)M)?(?:(?P<seconds>\\d+)S)?)?$"
)


def parse_duration(text):
    """Parse an ISO 8601 duration such as ``P1DT2H30M`` into a timedelta."""
    match = DURATION_RE.match(text.strip().upper())
    if not match or text.strip().upper() in ("P", "PT"):
        raise ValueError(f"not an ISO 8601 duration: {text!r}")
    parts = {name: int(value) for name, value in match.groupdict().items() if value}
    return timedelta(**parts)
'''},
    },
    {
        "id": "go-health-endpoint",
        "title": "Add /healthz endpoint for the load balancer",
        "body": "The load balancer needs a cheap liveness check. `/healthz` returns 200 with the build version "
                "when the database ping succeeds and 503 otherwise.",
        "files": {"server/health.go": '''package server

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

type healthResponse struct {
	Status  string `json:"status"`
	Version string `json:"version"`
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	status := http.StatusOK
	body := healthResponse{Status: "ok", Version: s.buildVersion}
	if err := s.db.PingContext(ctx); err != nil {
		status = http.StatusServiceUnavailable
		body.Status = "database unreachable"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}
'''},
    },
    {
        "id": "password-reset-expiry",
        "title": "Expire password reset links after one hour",
        "body": "Password reset tokens never expired. Store the issue time with each token, reject tokens older "
                "than one hour, and make a token single-use.",
        "files": {"accounts/reset.py": '''import secrets
from datetime import datetime, timedelta, timezone

RESET_TOKEN_LIFETIME = timedelta(hours=1)


def issue_reset_token(store, user_id):
    token = secrets.token_urlsafe(32)
    store[token] = {"user_id": user_id, "issued_at": datetime.now(timezone.utc)}
    return token


def redeem_reset_token(store, token):
    """Return the user id for a valid token and consume it; None if unknown, used or expired."""
    record = store.pop(token, None)
    if record is None:
        return None
    if datetime.now(timezone.utc) - record["issued_at"] > RESET_TOKEN_LIFETIME:
        return None
    return record["user_id"]
'''},
    },
    {
        "id": "shipping-cost-zones",
        "title": "Compute shipping cost from parcel weight and destination zone",
        "body": "Replaces the flat shipping fee with a table: a base price per zone plus a price per started "
                "kilogram. Parcels over 30 kg are rejected.",
        "files": {"shop/shipping.py": '''import math

ZONE_RATES = {
    "domestic": (4.90, 1.10),
    "europe": (9.50, 2.40),
    "world": (19.00, 5.80),
}
MAX_WEIGHT_KG = 30


def shipping_cost(weight_kg, zone):
    """Base price of the zone plus a price per started kilogram."""
    if weight_kg > MAX_WEIGHT_KG:
        raise ValueError("parcel too heavy to ship")
    base, per_kg = ZONE_RATES[zone]
    return round(base + per_kg * math.ceil(weight_kg), 2)
'''},
    },
    {
        "id": "markdown-toc",
        "title": "Generate a table of contents for long docs pages",
        "body": "Docs pages with more than three headings now start with a table of contents linking to each "
                "section heading.",
        "files": {"docs_builder/toc.py": '''import re

HEADING_RE = re.compile(r"^(#{2,4})\\s+(.*)$")


def anchor_for(title):
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def table_of_contents(markdown):
    """A nested Markdown list linking to every level 2-4 heading."""
    entries = []
    for line in markdown.splitlines():
        match = HEADING_RE.match(line)
        if match:
            depth = len(match.group(1)) - 2
            title = match.group(2).strip()
            entries.append(f"{'  ' * depth}- [{title}](#{anchor_for(title)})")
    return "\\n".join(entries) if len(entries) > 3 else ""
'''},
    },
    {
        "id": "orders-created-index",
        "title": "Add an index on orders.created_at",
        "body": "The daily sales report scans the whole orders table. A migration adds an index on the creation "
                "date so the date-range query uses an index scan.",
        "files": {"migrations/versions/0042_orders_created_at_index.py": '''"""index orders by creation date

Revision ID: 0042
Revises: 0041
"""

from alembic import op

revision = "0042"
down_revision = "0041"


def upgrade():
    op.create_index("ix_orders_created_at", "orders", ["created_at"])


def downgrade():
    op.drop_index("ix_orders_created_at", table_name="orders")
'''},
    },
    {
        "id": "request-id-logging",
        "title": "Include the request id in every log line",
        "body": "Middleware reads the X-Request-ID header (or generates one), binds it to the logging context "
                "and echoes it in the response so support can correlate logs with user reports.",
        "files": {"web/middleware/request_id.py": '''import contextvars
import logging
import uuid

request_id_var = contextvars.ContextVar("request_id", default="-")


class RequestIdFilter(logging.Filter):
    def filter(self, record):
        record.request_id = request_id_var.get()
        return True


class RequestIdMiddleware:
    header = "X-Request-ID"

    def __init__(self, app):
        self.app = app

    def __call__(self, request):
        request_id = request.headers.get(self.header) or uuid.uuid4().hex
        token = request_id_var.set(request_id)
        try:
            response = self.app(request)
        finally:
            request_id_var.reset(token)
        response.headers[self.header] = request_id
        return response
'''},
    },
    {
        "id": "temperature-units",
        "title": "Show temperatures in Fahrenheit for US users",
        "body": "Weather widgets displayed Celsius for everyone. Convert to Fahrenheit when the user's locale "
                "is en-US and round to whole degrees.",
        "files": {"weather/units.py": '''FAHRENHEIT_LOCALES = {"en-US", "en-LR", "my-MM"}


def celsius_to_fahrenheit(celsius):
    return celsius * 9 / 5 + 32


def display_temperature(celsius, locale):
    """Whole degrees in the unit the user's locale expects."""
    if locale in FAHRENHEIT_LOCALES:
        return f"{round(celsius_to_fahrenheit(celsius))}°F"
    return f"{round(celsius)}°C"
'''},
    },
    {
        "id": "image-resize-aspect",
        "title": "Keep the aspect ratio when resizing uploaded images",
        "body": "Uploaded product photos were stretched to 800x800. Scale them to fit within the box while "
                "preserving the aspect ratio.",
        "files": {"media/resize.py": '''def fit_within(width, height, max_width, max_height):
    """Largest size with the same aspect ratio that fits inside max_width x max_height."""
    scale = min(max_width / width, max_height / height, 1.0)
    return max(1, round(width * scale)), max(1, round(height * scale))


def resize_upload(image, max_width=800, max_height=800):
    new_size = fit_within(image.width, image.height, max_width, max_height)
    if new_size == (image.width, image.height):
        return image
    return image.resize(new_size)
'''},
    },
    {
        "id": "article-slugs",
        "title": "Readable URLs for blog articles",
        "body": "Article URLs used numeric ids. Generate a slug from the title (ASCII, lower case, hyphens) and "
                "append a counter when two articles share a title.",
        "files": {"blog/slugs.py": '''import re
import unicodedata


def slugify(title):
    """ASCII, lower-case, hyphen-separated slug of an article title."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-") or "article"


def unique_slug(title, existing_slugs):
    slug = slugify(title)
    candidate, counter = slug, 2
    while candidate in existing_slugs:
        candidate = f"{slug}-{counter}"
        counter += 1
    return candidate
'''},
    },
    {
        "id": "env-settings",
        "title": "Read service configuration from environment variables",
        "body": "The service read a hard-coded config dict. Settings now come from environment variables with "
                "documented defaults, and a missing required variable fails at start-up with its name.",
        "files": {"service/config.py": '''import os
from dataclasses import dataclass


class MissingSetting(RuntimeError):
    pass


def require(name):
    value = os.environ.get(name)
    if not value:
        raise MissingSetting(f"environment variable {name} is required")
    return value


@dataclass(frozen=True)
class Config:
    database_url: str
    port: int
    debug: bool


def load_config():
    return Config(
        database_url=require("DATABASE_URL"),
        port=int(os.environ.get("PORT", "8080")),
        debug=os.environ.get("DEBUG", "false").lower() == "true",
    )
'''},
    },
    {
        "id": "download-progress",
        "title": "Show a progress bar while downloading datasets",
        "body": "`fetch-data` printed nothing for minutes on large files. Stream the download in chunks and show "
                "a progress bar with the transferred size and percentage.",
        "files": {"cli/download.py": '''import sys

CHUNK_SIZE = 64 * 1024


def render_progress(done, total, width=40):
    fraction = done / total if total else 0.0
    filled = int(width * fraction)
    return f"[{'#' * filled}{'.' * (width - filled)}] {done / 1e6:.1f} MB {fraction:.0%}"


def download(response, destination):
    """Stream ``response`` to ``destination`` showing progress on stderr."""
    total = int(response.headers.get("Content-Length", 0))
    done = 0
    with open(destination, "wb") as out:
        for chunk in response.iter_content(CHUNK_SIZE):
            out.write(chunk)
            done += len(chunk)
            sys.stderr.write("\\r" + render_progress(done, total))
    sys.stderr.write("\\n")
'''},
    },
    {
        "id": "leaderboard-sort",
        "title": "Break leaderboard ties by player name",
        "body": "Players with equal scores appeared in random order on the leaderboard. Sort by score "
                "descending, then by name alphabetically.",
        "files": {"web/src/leaderboard.js": '''export function rankPlayers(players) {
  return [...players].sort((a, b) => {
    if (b.score !== a.score) {
      return b.score - a.score;
    }
    return a.name.localeCompare(b.name);
  });
}

export function renderLeaderboard(players) {
  return rankPlayers(players)
    .map((player, index) => `${index + 1}. ${player.name} (${player.score})`)
    .join("\\n");
}
'''},
    },
    {
        "id": "duplicate-uploads",
        "title": "Detect duplicate file uploads",
        "body": "Store the SHA-256 of every uploaded file and, when the same content is uploaded again, link to "
                "the existing file instead of storing a second copy.",
        "files": {"storage/dedupe.py": '''import hashlib


def content_digest(stream, block_size=1 << 20):
    digest = hashlib.sha256()
    for block in iter(lambda: stream.read(block_size), b""):
        digest.update(block)
    return digest.hexdigest()


def store_upload(index, blobs, stream):
    """Store an upload once per distinct content; return the blob id."""
    digest = content_digest(stream)
    existing = index.get(digest)
    if existing is not None:
        return existing
    stream.seek(0)
    blob_id = blobs.put(stream)
    index[digest] = blob_id
    return blob_id
'''},
    },
    {
        "id": "weekly-digest",
        "title": "Send a weekly digest email",
        "body": "Every Monday subscribers receive one email summarising the week's new posts and comments on "
                "their threads, instead of one notification per event.",
        "files": {"notifications/digest.py": '''from datetime import timedelta


def collect_week(events, user, now):
    since = now - timedelta(days=7)
    posts = [e for e in events if e.kind == "post" and e.created_at >= since]
    replies = [e for e in events if e.kind == "comment" and e.thread_owner == user.id and e.created_at >= since]
    return posts, replies


def weekly_digest(mailer, events, subscribers, now):
    """Send each subscriber one summary email of the past week."""
    if now.weekday() != 0:
        return 0
    sent = 0
    for user in subscribers:
        posts, replies = collect_week(events, user, now)
        if posts or replies:
            mailer.send(user.email, subject="Your weekly digest",
                        body=f"{len(posts)} new posts, {len(replies)} replies to your threads")
            sent += 1
    return sent
'''},
    },
    {
        "id": "luhn-card-check",
        "title": "Validate card numbers before calling the payment provider",
        "body": "Reject card numbers that fail the Luhn checksum in the checkout form, saving a round trip to "
                "the payment provider and giving the customer an immediate error.",
        "files": {"payments/cards.py": '''def luhn_valid(number):
    """True when the digits of ``number`` pass the Luhn checksum."""
    digits = [int(c) for c in str(number) if c.isdigit()]
    if len(digits) < 12:
        return False
    total = 0
    for index, digit in enumerate(reversed(digits)):
        if index % 2 == 1:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def check_card(form):
    if not luhn_valid(form["card_number"]):
        return {"card_number": "This card number is not valid."}
    return {}
'''},
    },
    {
        "id": "graceful-shutdown",
        "title": "Shut down gracefully on SIGTERM",
        "body": "On SIGTERM the worker stops taking new jobs, waits up to 30 seconds for running jobs to finish, "
                "then exits, so deploys no longer kill jobs half way.",
        "files": {"worker/shutdown.go": '''package worker

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const drainTimeout = 30 * time.Second

func (w *Worker) RunUntilSignal() error {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go w.Start()
	<-signals
	w.StopAccepting()
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	return w.WaitForRunningJobs(ctx)
}
'''},
    },
    {
        "id": "install-docs",
        "title": "Document installation on Windows",
        "body": "The README only covered Linux and macOS. Add Windows installation steps using winget and "
                "explain how to add the tool to PATH.",
        "files": {"docs/install.md": '''## Windows

Install with winget:

    winget install acme.tool

The installer adds the tool to your user PATH. Open a new terminal and check the version:

    tool --version

If the command is not found, add `%LOCALAPPDATA%\\Programs\\tool` to PATH under
*Settings → System → About → Advanced system settings → Environment Variables*.
'''},
    },
]

# Harder mismatches: a change under the description of another change from the same area of the product
# (change id, id of the description it is given).
HARD_MISMATCHES: list[tuple[str, str]] = [
    ("login-rate-limit", "password-reset-expiry"),
    ("password-reset-expiry", "signup-email-validation"),
    ("orders-csv-export", "orders-created-index"),
    ("signup-email-validation", "luhn-card-check"),
    ("search-debounce", "leaderboard-sort"),
    ("avatar-thumbnail-cache", "image-resize-aspect"),
    ("image-resize-aspect", "duplicate-uploads"),
    ("webhook-retry-backoff", "graceful-shutdown"),
    ("weekly-digest", "webhook-retry-backoff"),
    ("shipping-cost-zones", "luhn-card-check"),
    ("env-settings", "request-id-logging"),
    ("go-health-endpoint", "graceful-shutdown"),
]
