"""Settings for the registry service, all from environment variables.

BENCHPACK_ENV selects the mode: `local` (the README's demo: SQLite under var/,
console email, serverless Celery broker, a dev secret key), `test` (locmem
email), `production` (every secret must come from the environment).
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from registry_site.env import env_bool, env_choice, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("BENCHPACK_VAR_DIR", str(BASE_DIR / "var")))

ENV = env_choice("BENCHPACK_ENV", "local", {"local", "test", "production"})
DEBUG = env_bool("DEBUG", ENV == "local")

if ENV == "production":
    SECRET_KEY = env_str("SECRET_KEY")
    ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [])
    if not ALLOWED_HOSTS:
        raise ImproperlyConfigured("environment variable ALLOWED_HOSTS is required in production")
else:
    # Only the local/test modes have a default secret; it never signs anything public.
    SECRET_KEY = env_str("SECRET_KEY", "benchpack-local-development-only-not-secret")
    ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])

SITE_URL = env_str("SITE_URL", "http://127.0.0.1:8000")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [SITE_URL])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.sites",
    "allauth",
    "allauth.account",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI files as static files (no CDN)
    "csp",
    "registry_site.apps.ProjectConfig",  # the project: settings, urls, celery, shared helpers, demo commands
    "registry_site.catalogue.apps.CatalogueConfig",  # the public catalogue (app label "registry_site")
    "accounts",
    "submissions",
]

MIDDLEWARE = [
    # Outermost: a database that refuses a connection (pool timeout, too many connections, server down)
    # answers 503 with Retry-After, not 500.
    "registry_site.dbguard.DatabaseUnavailableMiddleware",
    # First: refuses an oversized body by its Content-Length before anything reads it.
    "registry_site.limits.RequestBodyLimitMiddleware",
    # Then: the uploader's hourly limit and concurrent-upload cap, also before the body is read (CSRF reads it).
    "submissions.upload_gate.UploadGateMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    # Before WhiteNoise, so static files get X-Frame-Options too (it only sets a response header).
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Static files inside Django, after the header middleware above: every response the deployment serves,
    # /static/ included, carries the same CSP, HSTS, nosniff and Referrer-Policy (granian's own static
    # server cannot add headers; deploy/systemd/benchpack-web.service no longer uses it).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Anonymous GETs of the public catalogue, cached until the catalogue changes (registry_site/catalogue/cache.py).
    # Before the session/auth/CSRF middleware: a hit skips them; the headers they add are in the cached response.
    "registry_site.catalogue.cache.PublicResponseCacheMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]

# registry_site/catalogue/cache.py: anonymous catalogue GETs served from a per-process cache keyed by the
# catalogue's generation (bumped in every transaction that changes public data).
CATALOGUE_RESPONSE_CACHE = env_bool("CATALOGUE_RESPONSE_CACHE", True)
# PostgreSQL: each web process follows the catalogue generation by LISTEN/NOTIFY (one extra connection per
# process, outside the pool) instead of reading it on every request; a change is seen within this many ms of
# its commit at worst, else the request reads the row (registry_site/catalogue/generation.py).
CATALOGUE_GENERATION_LISTEN = env_bool("CATALOGUE_GENERATION_LISTEN", True)
CATALOGUE_GENERATION_MAX_STALE_MS = env_int("CATALOGUE_GENERATION_MAX_STALE_MS", 2000, minimum=100)

ROOT_URLCONF = "registry_site.urls"
WSGI_APPLICATION = "registry_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'registry.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0, minimum=0),
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Celery workers and granian write concurrently. A deferred transaction that
    # reads and then writes cannot upgrade its lock and fails at once with
    # "database is locked" (the busy timeout never applies); IMMEDIATE takes the
    # write lock at BEGIN, where the timeout does apply. WAL lets readers run
    # beside the one writer (it persists in the file).
    DATABASES["default"]["OPTIONS"] = {
        **DATABASES["default"].get("OPTIONS", {}),
        "transaction_mode": "IMMEDIATE",
        "timeout": env_int("SQLITE_BUSY_TIMEOUT_S", 20, minimum=1),
        # temp_store=MEMORY: SQLite's sort and statement-journal files stay out of the temporary directory the
        # validation worker fills with extracted bundles; with them there, a full disk also failed the write
        # that records the disk-full failure ("database or disk is full"), and the submission sat `received`.
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY;",
    }

if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool("DATABASE_POOL", True):
    # Bounded connections (issue 30 item 7): with one persistent connection per thread
    # (CONN_MAX_AGE=60) two granian workers held 38 idle connections after a 16-client load and the next
    # clients got 500s. Each process now shares one psycopg pool of at most DATABASE_POOL_MAX_SIZE
    # connections — size it to the threads that serve requests in one worker; the server then sees at
    # most workers × that. A request that waits DATABASE_POOL_TIMEOUT_S for a free connection, or that
    # the server refuses (too many connections), answers 503 with Retry-After
    # (registry_site.dbguard.DatabaseUnavailableMiddleware). A pool returns connections itself, so
    # Django's persistent connections are off (Django refuses both at once).
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        **DATABASES["default"].get("OPTIONS", {}),
        "pool": {
            "min_size": env_int("DATABASE_POOL_MIN_SIZE", 1, minimum=0),
            "max_size": env_int("DATABASE_POOL_MAX_SIZE", 4, minimum=1),
            "timeout": env_int("DATABASE_POOL_TIMEOUT_S", 5, minimum=1),
            # Idle connections above min_size close after this long, so a burst does not leave them open.
            "max_idle": env_int("DATABASE_POOL_MAX_IDLE_S", 60, minimum=1),
        },
    }
    if DATABASES["default"]["OPTIONS"]["pool"]["min_size"] > DATABASES["default"]["OPTIONS"]["pool"]["max_size"]:
        raise ImproperlyConfigured("DATABASE_POOL_MIN_SIZE must be <= DATABASE_POOL_MAX_SIZE")
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and not env_bool("DATABASE_JIT", False):
    # PostgreSQL's JIT compiler off for the registry's connections (issue 34 item 4): at 10M case rows the
    # planner's row estimates lifted timeline reads over jit_above_cost, and one statement spent 1.0 s
    # compiling to run in 0.95 s (EXPLAIN ANALYZE, docs/leaderboards.md "At 10M case rows"). The
    # catalogue's reads are indexed and short; they never earn the compile back.
    # DATABASE_JIT=true leaves the server's own setting.
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _options["options"] = f"{_options.get('options', '')} -c jit=off".strip()
# Seconds a client is told to wait (Retry-After) when the database refuses a connection.
DATABASE_RETRY_AFTER_S = env_int("DATABASE_RETRY_AFTER_S", 5, minimum=1)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
SITE_ID = 1  # its domain and name follow SITE_URL after every `migrate` (registry_site.apps)

# Every limit and throttle (allauth's login rate limits, DRF throttles) counts in
# this cache, shared by all web processes and kept across restarts: the database
# cache by default (its table is created after `migrate`), Redis when CACHE_URL is set.
CACHE_URL = env_str("CACHE_URL", "")
if CACHE_URL:
    # Degrades to a per-process cache while Redis is away instead of answering 500 (registry_site/cache.py).
    CACHES = {"default": {"BACKEND": "registry_site.cache.DegradingRedisCache", "LOCATION": CACHE_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "benchpack_cache"}}

# How many proxies stand in front of granian and append to X-Forwarded-For
# (1 behind Traefik). 0 trusts no X-Forwarded-For at all: the client address is
# the socket's. Never more than the real count, or a client picks its own
# throttle key by sending the header.
NUM_PROXIES = env_int("NUM_PROXIES", 0, minimum=0)
ALLAUTH_TRUSTED_PROXY_COUNT = NUM_PROXIES
# Failed logins count per address, per (login name, address) and per login name across addresses with a
# ceiling no single address can reach, so an attacker cannot lock an account's owner out (accounts/adapter.py).
ACCOUNT_ADAPTER = "accounts.adapter.AccountAdapter"
ACCOUNT_RATE_LIMITS = {
    "login_failed": env_str("LOGIN_FAILED_RATE_LIMIT", "10/m/ip,5/5m/key"),
    "login_failed_account": env_str("LOGIN_FAILED_ACCOUNT_RATE_LIMIT", "100/h/key"),
}

# allauth: login by email, verified email mandatory before anything else.
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "mandatory"
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_CONFIRM_EMAIL_ON_GET = False
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True
ACCOUNT_CHANGE_EMAIL = True
ACCOUNT_EMAIL_SUBJECT_PREFIX = "[Benchpack] "
ACCOUNT_DEFAULT_HTTP_PROTOCOL = "https" if ENV == "production" else "http"
LOGIN_REDIRECT_URL = "/submissions/"
LOGIN_URL = "/accounts/login/"

DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Benchpack <noreply@benchpack.local>")
# EMAIL_DELIVERY_BACKEND sends; EMAIL_BACKEND (what Django and allauth call)
# only queues the message in the database, inside the caller's transaction, and
# a worker delivers it (submissions.mailqueue): an SMTP server that is down
# never fails a request, and a message is never lost.
if ENV == "production":
    EMAIL_DELIVERY_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    EMAIL_HOST = env_str("EMAIL_HOST")
    EMAIL_PORT = env_int("EMAIL_PORT", 587)
    EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
    EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
    EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
    EMAIL_TIMEOUT = 20
elif ENV == "test":
    EMAIL_DELIVERY_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
else:
    EMAIL_DELIVERY_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
    EMAIL_FILE_PATH = str(VAR_DIR / "outbox")
    EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
    EMAIL_PORT = env_int("EMAIL_PORT", 25)
    EMAIL_TIMEOUT = 10
# The unit tests read django.core.mail.outbox directly; the live tests and every
# other mode go through the queue.
EMAIL_QUEUE = env_bool("EMAIL_QUEUE", ENV != "test")
EMAIL_BACKEND = "submissions.mailqueue.QueuedEmailBackend" if EMAIL_QUEUE else EMAIL_DELIVERY_BACKEND
EMAIL_MAX_DELIVERY_ATTEMPTS = env_int("EMAIL_MAX_DELIVERY_ATTEMPTS", 20, minimum=1)
# How often beat retries queued email that could not be sent (SMTP down).
EMAIL_DELIVERY_INTERVAL_S = env_int("EMAIL_DELIVERY_INTERVAL_S", 30, minimum=1)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
# WhiteNoise (see MIDDLEWARE): names are not content-hashed, so browsers keep a file for an hour, as before.
WHITENOISE_MAX_AGE = 3600

# A failed CSRF check under /api/ answers the API's JSON error shape (registry_site/catalogue/api/errors.py).
CSRF_FAILURE_VIEW = "registry_site.catalogue.api.errors.csrf_failure"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # JSON nested past any real payload is a 400 before it reaches the recursive decoder (api/parsers.py).
    "DEFAULT_PARSER_CLASSES": ["registry_site.catalogue.api.parsers.JSONParser", "rest_framework.parsers.FormParser",
                               "rest_framework.parsers.MultiPartParser"],
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "DEFAULT_THROTTLE_CLASSES": [
        "registry_site.catalogue.api.throttles.AnonymousRateThrottle",
        "registry_site.catalogue.api.throttles.SignedInUserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_str("API_ANON_RATE", "120/minute"),
        "user": env_str("API_USER_RATE", "600/minute"),
    },
    "NUM_PROXIES": NUM_PROXIES,
    # Public catalogue API (docs/api.md): one error shape, django-filter filters,
    # page-number envelope {count, next, previous, results}, OpenAPI schema.
    "EXCEPTION_HANDLER": "registry_site.catalogue.api.errors.exception_handler",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "registry_site.catalogue.api.pagination.CataloguePagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Benchpack registry API",
    "DESCRIPTION": "Approved benchmark results: runs, cases, systems, leaderboards, comparisons, timelines.",
    "VERSION": "1",
    # OpenAPI 3.1: a nullable object reference is `oneOf: [{$ref}, {type: null}]` (JSON Schema 2020-12), which
    # strict validators read one way; 3.0's `allOf + nullable` without a type refuses the null it means to allow.
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "PREPROCESSING_HOOKS": ["registry_site.catalogue.api.schema.api_v1_only"],
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "registry_site.catalogue.api.schema.error_responses",
                             "registry_site.catalogue.api.schema.database_neutral_integers",
                             "registry_site.catalogue.api.schema.parameter_bounds",
                             "registry_site.catalogue.api.schema.nullable_as_type_null",
                             "registry_site.catalogue.api.private_schema.required_request_bodies",
                             "registry_site.catalogue.api.schema.public_first"],
}

# Content-Security-Policy (django-csp 4): nothing inline, nothing from elsewhere.
# Pages put their JavaScript and CSS in static files (docs/service.md).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'none'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
        "base-uri": ["'none'"],
    },
}

# Request bodies: refused by Content-Length before they are read
# (registry_site.limits). Upload views take one archive plus form overhead.
REQUEST_MAX_BYTES = env_int("REQUEST_MAX_BYTES", 1024 * 1024, minimum=1024)
SUBMISSION_MAX_BYTES = env_int("SUBMISSION_MAX_BYTES", 20 * 1024 * 1024, minimum=1)
UPLOAD_REQUEST_OVERHEAD_BYTES = 64 * 1024
UPLOAD_URL_NAMES = {"submissions:upload", "api_submissions", "api_runner_finish"}
DATA_UPLOAD_MAX_MEMORY_SIZE = REQUEST_MAX_BYTES
# Django's default (2.5 MB): a larger archive streams to a temporary file while it arrives, not into memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = env_int("FILE_UPLOAD_MAX_MEMORY_SIZE", 2_621_440, minimum=0)
# Uploads one user may have in progress at once, refused (429) before the body is read (submissions/upload_gate.py).
SUBMISSION_MAX_CONCURRENT_UPLOADS = env_int("SUBMISSION_MAX_CONCURRENT_UPLOADS", 2, minimum=1)
# Where validation extracts archives ("" = the system's temporary directory). Put it on its own filesystem
# (or a size-limited tmpfs) so a bundle that fills it cannot fill the database's disk too.
VALIDATION_SCRATCH_DIR = env_str("VALIDATION_SCRATCH_DIR", "")
# A refused (`invalid`) archive keeps its first bytes, hash, size and report; the rest is deleted after this
# long by the hourly `trim-invalid-archives` beat task (submissions/retention.py).
INVALID_ARCHIVE_RETENTION_S = env_int("INVALID_ARCHIVE_RETENTION_S", 24 * 3600, minimum=0)
INVALID_ARCHIVE_KEEP_BYTES = env_int("INVALID_ARCHIVE_KEEP_BYTES", 4096, minimum=0)
FILE_UPLOAD_HANDLERS = [
    "registry_site.limits.SizeLimitedUploadHandler",  # counts and stops; the next two store
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

# Submissions
SUBMISSION_RATE_LIMIT_PER_HOUR = env_int("SUBMISSION_RATE_LIMIT_PER_HOUR", 10, minimum=1)
# What a bundle may expand to and store (submissions.validation): the
# expanded bytes are capped at a multiple of the upload and absolutely.
SUBMISSION_MAX_EXPANSION_RATIO = env_int("SUBMISSION_MAX_EXPANSION_RATIO", 50, minimum=1)
SUBMISSION_MAX_EXPANDED_BYTES = env_int("SUBMISSION_MAX_EXPANDED_BYTES", 64 * 1024 * 1024, minimum=1024)
SUBMISSION_MAX_ROWS_PER_RUN = env_int("SUBMISSION_MAX_ROWS_PER_RUN", 20_000, minimum=1)
SUBMISSION_MAX_CASES_PER_RUN = env_int("SUBMISSION_MAX_CASES_PER_RUN", 2_000, minimum=1)
SUBMISSION_MAX_ROW_BYTES = env_int("SUBMISSION_MAX_ROW_BYTES", 64 * 1024, minimum=1024)
# Validation jobs (registry_site.jobs): a running validation writes a heartbeat
# every SUBMISSION_HEARTBEAT_S; one silent for SUBMISSION_HEARTBEAT_TIMEOUT_S
# (its worker died) is handed back by the reaper, which runs every
# SUBMISSION_REAPER_INTERVAL_S wherever a worker runs (beat). After
# SUBMISSION_MAX_VALIDATION_ATTEMPTS starts the submission ends `failed`.
SUBMISSION_HEARTBEAT_S = env_int("SUBMISSION_HEARTBEAT_S", 5, minimum=1)
SUBMISSION_HEARTBEAT_TIMEOUT_S = env_int("SUBMISSION_HEARTBEAT_TIMEOUT_S", 30, minimum=2)
SUBMISSION_REAPER_INTERVAL_S = env_int("SUBMISSION_REAPER_INTERVAL_S", 10, minimum=1)
SUBMISSION_MAX_VALIDATION_ATTEMPTS = env_int("SUBMISSION_MAX_VALIDATION_ATTEMPTS", 3, minimum=1)
# An upload whose validation message was queued this long ago and is still
# `received` is sent again (a broker that lost it); one never queued (broker
# down at upload) is sent by the next reaper run.
SUBMISSION_VALIDATING_TIMEOUT_S = env_int("SUBMISSION_VALIDATING_TIMEOUT_S", 900, minimum=1)

# Run queue (docs/runner-hosts.md). Runner workers are not this Django project:
# they run submissions.runqueue.runner with a host token and a broker login of
# their own, and reach the registry only over its HTTP API.
# The broker that carries `runs.<host>` queues: RabbitMQ in production (one user
# per host, limited to its queue: submissions.runqueue.broker_users); unset, the
# same broker as everything else (the demo's filesystem broker, or Redis).
RUNNER_BROKER_URL = env_str("RUNNER_BROKER_URL", "") or None
# How `manage.py runner_host` reaches RabbitMQ's user database (shell words).
RABBITMQCTL = env_str("RABBITMQCTL", "rabbitmqctl")
# The longest run a request may ask for; a request's own limit defaults to
# RUN_REQUEST_DEFAULT_TIME_LIMIT_S (at most this).
RUN_REQUEST_MAX_S = env_int("RUN_REQUEST_MAX_S", 6 * 3600, minimum=1)
RUN_REQUEST_DEFAULT_TIME_LIMIT_S = min(2 * 3600, RUN_REQUEST_MAX_S)
RUN_REQUEST_MAX_REPETITIONS = 100
# Executions of one request, counting the first: 2 = one retry after a lost worker.
RUN_REQUEST_MAX_ATTEMPTS = env_int("RUN_REQUEST_MAX_ATTEMPTS", 2, minimum=1)
# A running request whose worker has not written a heartbeat for this long is
# lost: the reaper retries it (attempts left) or fails it ("worker lost"). The
# worker beats every RUN_HEARTBEAT_TIMEOUT_S / 6 s (5 s by default: six missed
# beats), so a worker killed mid-run is recovered within RUN_HEARTBEAT_TIMEOUT_S
# + RUN_REAPER_INTERVAL_S (40 s by default; docs/runner-hosts.md "Stuck requests").
RUN_HEARTBEAT_TIMEOUT_S = env_int("RUN_HEARTBEAT_TIMEOUT_S", 30, minimum=2)
RUN_HEARTBEAT_INTERVAL_S = max(0.5, min(15.0, RUN_HEARTBEAT_TIMEOUT_S / 6))
RUNNER_HOST_OFFLINE_AFTER_S = max(3 * RUN_HEARTBEAT_INTERVAL_S, 30.0)
RUN_REAPER_INTERVAL_S = env_int("RUN_REAPER_INTERVAL_S", 10, minimum=1)
# A queued request whose message went out this long ago while its host is online
# and idle was not taken (left queued by a busy host, or its message was lost with
# a purged queue): the reaper sends it again (a second delivery is harmless: one claim wins).
RUN_RESEND_AFTER_S = env_int("RUN_RESEND_AFTER_S", 30, minimum=1)
# A request that has not started this long after it was queued (its host stayed
# offline) ends failed with that reason instead of waiting for ever.
RUN_REQUEST_MAX_QUEUED_S = env_int("RUN_REQUEST_MAX_QUEUED_S", 24 * 3600, minimum=1)

# Celery: a real worker always. Locally a kombu filesystem transport needs no
# server; CI and production set CELERY_BROKER_URL=redis://...
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
RUNNER_BROKER_URL = RUNNER_BROKER_URL or CELERY_BROKER_URL
CELERY_BROKER_DIR = VAR_DIR / "broker"
# Redis hands an unacknowledged message to another worker once it is this old,
# and every worker on the broker applies its own value: it must exceed the
# longest run (plus its kill grace), or a long benchmark starts twice
# (readthedocs PRs #12342, #12442). The run's database claim refuses a second
# copy anyway; this keeps the copy from being made.
CELERY_VISIBILITY_TIMEOUT_S = env_int(
    "CELERY_VISIBILITY_TIMEOUT_S", max(SUBMISSION_VALIDATING_TIMEOUT_S, RUN_REQUEST_MAX_S + 3600), minimum=1
)
if CELERY_VISIBILITY_TIMEOUT_S <= RUN_REQUEST_MAX_S:
    raise ImproperlyConfigured(
        f"environment variable CELERY_VISIBILITY_TIMEOUT_S={CELERY_VISIBILITY_TIMEOUT_S} must exceed "
        f"RUN_REQUEST_MAX_S={RUN_REQUEST_MAX_S}: Redis would redeliver a running benchmark to a second worker"
    )
if CELERY_BROKER_URL == "filesystem://":
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_BROKER_DIR / "queue"),
        "data_folder_out": str(CELERY_BROKER_DIR / "queue"),
        "processed_folder": str(CELERY_BROKER_DIR / "processed"),
        "control_folder": str(CELERY_BROKER_DIR / "control"),
        "store_processed": False,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_VISIBILITY_TIMEOUT_S}
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 600, minimum=1)
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 30 if CELERY_TASK_TIME_LIMIT > 60 else CELERY_TASK_TIME_LIMIT
CELERY_TASK_IGNORE_RESULT = True
# A broker that is down must not hold a web request for long: the upload is
# committed either way and the reaper sends its message later.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5}
CELERY_BEAT_SCHEDULE = {
    "reap-stuck-validations": {
        "task": "submissions.tasks.reap_stuck_validations",
        "schedule": float(SUBMISSION_REAPER_INTERVAL_S),
    },
    "deliver-queued-email": {"task": "submissions.tasks.deliver_queued_email", "schedule": float(EMAIL_DELIVERY_INTERVAL_S)},
    "reap-lost-runs": {"task": "submissions.runqueue.tasks.reap_lost_runs", "schedule": float(RUN_REAPER_INTERVAL_S)},
    "trim-invalid-archives": {"task": "submissions.tasks.trim_invalid_archives", "schedule": 3600.0},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}

# --- production hardening (owned by deploy/; see deploy/README.md) -----------
# TLS ends at Traefik, which overwrites X-Forwarded-Proto on every request;
# granian listens on loopback only, so that header cannot be forged from outside.
if ENV == "production":
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    # Start staging with a short HSTS (e.g. 3600) and raise it once TLS is proven:
    # browsers remember the header for this long and there is no undo.
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    # Preload is a commitment for the whole apex domain and needs a manual
    # submission; the registry runs on one host name, so the operator decides.
    SILENCED_SYSTEM_CHECKS = ["security.W021"]
# --- end production hardening -------------------------------------------------
