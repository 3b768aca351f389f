#!/usr/bin/env bash
# Deploy the Benchpack registry on this host, from an app directory that the
# source sync has just replaced: dependencies, config check, SQLite backup,
# migrations, static files, systemd units, restart, smoke test.
#
# Idempotent: every step converges (uv sync, migrate, collectstatic and unit
# installation do nothing when nothing changed), so a failed deploy is fixed
# and re-run, never resumed by hand. --dry-run prints the steps and changes
# nothing. Layout and reasons: deploy/README.md.
set -euo pipefail

readonly UNITS=(benchpack-web benchpack-worker benchpack-beat)
readonly PLACEHOLDER=CHANGE-ME
readonly KEEP_BACKUPS=10

DRY_RUN=0
ENV_FILE=/etc/benchpack/benchpack.env
APP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=/opt/benchpack/venv
SERVICE_USER=benchpack
UNIT_DIR=/etc/systemd/system
# Absolute, because runuser may give the service user a different PATH.
UV=$(command -v uv || echo uv)

usage() {
    cat <<EOF
usage: deploy/deploy.sh [--dry-run] [--env-file PATH] [--app-dir DIR] [--venv DIR] [--user NAME]

  --dry-run        print every step, change nothing (no root needed)
  --env-file PATH  environment file the units use   [$ENV_FILE]
  --app-dir DIR    synced source tree                [$APP_DIR]
  --venv DIR       virtualenv uv sync creates        [$VENV]
  --user NAME      service user that runs the app    [$SERVICE_USER]
EOF
}

die() {
    echo "deploy: $*" >&2
    exit 2
}

while (($#)); do
    case $1 in
        --dry-run) DRY_RUN=1 ;;
        --env-file) ENV_FILE=${2:?--env-file needs a path}; shift ;;
        --app-dir) APP_DIR=${2:?--app-dir needs a directory}; shift ;;
        --venv) VENV=${2:?--venv needs a directory}; shift ;;
        --user) SERVICE_USER=${2:?--user needs a name}; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
done

# Print a command shell-quoted, then run it unless this is a dry run.
run() {
    printf '+'
    printf ' %q' "$@"
    printf '\n'
    ((DRY_RUN)) || "$@"
}

step() {
    printf '\n== %s\n' "$*"
}

# Same rules as systemd's EnvironmentFile=: KEY=value lines, whole-line
# comments, optional double quotes. The file is parsed, never sourced, so a
# value cannot run code in this root shell.
load_env_file() {
    local line key value
    [[ -r $ENV_FILE ]] || die "cannot read environment file $ENV_FILE (copy deploy/benchpack.env.example)"
    while IFS= read -r line || [[ -n $line ]]; do
        line=${line#"${line%%[![:space:]]*}"}
        [[ -z $line || $line == \#* ]] && continue
        [[ $line == *=* ]] || die "$ENV_FILE: not KEY=value: $line"
        key=${line%%=*}
        value=${line#*=}
        [[ $key =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "$ENV_FILE: bad variable name: $key"
        if [[ $value == \"*\" && ${#value} -ge 2 ]]; then
            value=${value:1:${#value}-2}
        fi
        [[ $value == "$PLACEHOLDER" ]] && die "$ENV_FILE: $key is still $PLACEHOLDER"
        export "$key=$value"
    done <"$ENV_FILE"
}

# The database and everything else under BENCHPACK_VAR_DIR must survive the
# source sync, which deletes whatever is not in the repository.
check_paths() {
    [[ ${BENCHPACK_ENV:-} == production ]] || die "$ENV_FILE: BENCHPACK_ENV must be production"
    [[ ${BENCHPACK_VAR_DIR:-} == /* ]] || die "$ENV_FILE: BENCHPACK_VAR_DIR must be an absolute path"
    APP_DIR=$(realpath -m "$APP_DIR")
    VAR_DIR=$(realpath -m "$BENCHPACK_VAR_DIR")
    [[ -f $APP_DIR/manage.py ]] || die "$APP_DIR has no manage.py: not the registry source"
    case $VAR_DIR/ in
        "$APP_DIR"/*) die "BENCHPACK_VAR_DIR=$VAR_DIR is inside the app directory $APP_DIR; the next sync would delete it" ;;
    esac
    SQLITE_DB=
    case ${DATABASE_URL:-} in
        "") SQLITE_DB=$VAR_DIR/registry.sqlite3 ;;
        sqlite:////*) SQLITE_DB=$(realpath -m "${DATABASE_URL#sqlite://}") ;;
        sqlite:*) die "DATABASE_URL must name an absolute SQLite path (sqlite:////var/lib/...)" ;;
    esac
    if [[ -n $SQLITE_DB ]]; then
        case $SQLITE_DB in
            "$APP_DIR"/*) die "SQLite database $SQLITE_DB is inside the app directory $APP_DIR" ;;
        esac
    fi
}

unit_value() {
    sed -n "s/^$2=//p" "$APP_DIR/deploy/systemd/$1.service" | head -n 1
}

# The units name the tree, venv and env file literally (systemd cannot take
# them from this script), so a deploy with other paths would restart services
# still running the old ones.
check_layout() {
    local workdir program envfile message
    workdir=$(unit_value benchpack-web WorkingDirectory)
    program=$(unit_value benchpack-web ExecStart)
    program=${program%% *}
    envfile=$(unit_value benchpack-web EnvironmentFile)
    if [[ $workdir != "$APP_DIR" || $program != "$VENV/bin/granian" || $envfile != "$ENV_FILE" ]]; then
        message="the units use $workdir, $program, $envfile; this deploy uses $APP_DIR, $VENV, $ENV_FILE: make deploy/systemd/*.service match"
        if ((DRY_RUN)); then
            echo "warning: $message"
        else
            die "$message"
        fi
    fi
}

check_privileges() {
    ((DRY_RUN)) && return
    [[ $(id -u) -eq 0 ]] || die "run as root (units and service-user commands need it), or use --dry-run"
    id -u "$SERVICE_USER" >/dev/null 2>&1 || die "service user $SERVICE_USER does not exist (deploy/README.md, first install)"
    command -v "$UV" >/dev/null || die "uv is not on PATH"
    if [[ -n $SQLITE_DB ]]; then
        command -v sqlite3 >/dev/null || die "sqlite3 is not installed (apt install sqlite3); it takes the pre-migration backup"
    fi
}

# App commands run as the service user so every file they create is its own.
as_app() {
    run runuser -u "$SERVICE_USER" -- "$@"
}

manage() {
    as_app "$VENV/bin/python" "$APP_DIR/manage.py" "$@"
}

backup_sqlite() {
    if [[ -z $SQLITE_DB ]]; then
        echo "database is not SQLite: take a pg_dump before deploying (deploy/README.md)"
        return
    fi
    if [[ ! -f $SQLITE_DB ]] && ((!DRY_RUN)); then
        echo "no database yet at $SQLITE_DB: first deploy, nothing to back up"
        return
    fi
    local backup
    backup=$VAR_DIR/backups/registry-$(date -u +%Y%m%dT%H%M%SZ)-pre-deploy.sqlite3
    # .backup copies a consistent snapshot while the old release keeps serving.
    as_app sqlite3 "$SQLITE_DB" ".backup '$backup'"
    echo "keep the newest $KEEP_BACKUPS pre-deploy backups in $VAR_DIR/backups"
    if ((!DRY_RUN)); then
        find "$VAR_DIR/backups" -maxdepth 1 -name 'registry-*-pre-deploy.sqlite3' -printf '%f\n' |
            sort -r | tail -n +$((KEEP_BACKUPS + 1)) |
            while read -r old; do rm -f -- "$VAR_DIR/backups/$old"; done
    fi
}

install_units() {
    local source target changed=0
    for unit in "${UNITS[@]}"; do
        source=$APP_DIR/deploy/systemd/$unit.service
        target=$UNIT_DIR/$unit.service
        if ! cmp -s "$source" "$target"; then
            run install -m 0644 "$source" "$target"
            changed=1
        fi
    done
    if ((changed)); then
        run systemctl daemon-reload
    else
        echo "units unchanged"
    fi
    run systemctl enable --quiet "${UNITS[@]}"
}

smoke_test() {
    local host port
    host=${ALLOWED_HOSTS%%,*}
    port=$(grep -oE -- '--port [0-9]+' "$APP_DIR/deploy/systemd/benchpack-web.service" | cut -d' ' -f2)
    # The headers Traefik would send: a known host, and HTTPS already terminated.
    run curl --fail --silent --show-error --output /dev/null --retry 15 --retry-delay 1 --retry-connrefused \
        --header "Host: $host" --header "X-Forwarded-Proto: https" "http://127.0.0.1:$port/"
}

main() {
    load_env_file
    check_paths
    check_privileges
    check_layout
    ((DRY_RUN)) && echo "dry run: printing the steps, changing nothing"
    cd "$APP_DIR"
    # uv-managed Python and the venv live outside the synced tree, so a sync
    # never deletes the interpreter the running services use.
    export UV_PROJECT_ENVIRONMENT=$VENV
    export UV_PYTHON_INSTALL_DIR=${UV_PYTHON_INSTALL_DIR:-$(dirname "$VENV")/python}

    step "state and venv directories"
    run install -d -m 0750 -o "$SERVICE_USER" -g "$SERVICE_USER" "$VAR_DIR" "$VAR_DIR/backups" "$VENV" "$UV_PYTHON_INSTALL_DIR"

    step "dependencies (uv.lock, no dev tools)"
    as_app "$UV" sync --frozen --no-dev --extra service

    step "configuration check"
    manage check --deploy --fail-level WARNING

    step "database backup"
    backup_sqlite

    step "migrations"
    manage migrate --noinput

    step "static files"
    manage collectstatic --noinput --verbosity 0

    step "systemd units"
    install_units

    step "restart"
    run systemctl restart "${UNITS[@]}"

    step "smoke test"
    smoke_test

    if ((DRY_RUN)); then
        printf '\ndry run finished: nothing changed\n'
    else
        printf '\ndeployed\n'
    fi
}

main
