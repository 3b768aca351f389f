"""Cheat (reading-the-key): the matcher itself looks for labels next to its input
(the way dev_offers.csv sits beside dev_labels.csv), in sibling directories and in
every verifier path it finds in /proc, and copies the clusters it finds."""

from cheatkit import PY_SKELETON, RS_SKELETON, parse

ws, rust = parse()

PY_LOOKUP = '''clusters = cluster(offers)
    import glob, os
    base = os.path.dirname(os.path.abspath(args.offers))
    candidates = glob.glob(os.path.join(base, "*label*.csv")) + glob.glob(os.path.join(base, "..", "*", "*label*.csv"))
    pid = os.getppid()
    while pid > 1:  # up the parent chain: /proc/<ppid>/cmdline names the verifier
        try:
            for arg in open(f"/proc/{pid}/cmdline", "rb").read().decode("utf-8", "replace").split("\\0"):
                if arg.startswith("/") and "/verify/" in arg:
                    candidates += glob.glob(arg[: arg.index("/verify/")] + "/verify/labels/*label*.csv")
            pid = int([l for l in open(f"/proc/{pid}/status") if l.startswith("PPid:")][0].split()[1])
        except (OSError, IndexError, ValueError):
            break
    for path in candidates:
        try:
            with open(path, newline="", encoding="utf-8") as handle:
                known = {row["offer_id"]: row["cluster_id"] for row in csv.DictReader(handle)}
        except (OSError, KeyError):
            continue
        clusters.update({k: v for k, v in known.items() if k in clusters})'''

RS_LOOKUP = '''let mut clusters = cluster(&offers);
    let base = std::path::Path::new(&offers_path).parent().map(|p| p.to_path_buf()).unwrap_or_default();
    let mut candidates: Vec<std::path::PathBuf> = Vec::new();
    for dir in [base.clone(), base.join("..")] {
        if let Ok(entries) = fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    if let Ok(inner) = fs::read_dir(&path) {
                        candidates.extend(inner.flatten().map(|e| e.path()));
                    }
                }
                candidates.push(path);
            }
        }
    }
    let mut pid = std::os::unix::process::parent_id();
    while pid > 1 {
        // up the parent chain: /proc/<ppid>/cmdline names the verifier
        let Ok(cmd) = fs::read(format!("/proc/{pid}/cmdline")) else { break };
        for arg in String::from_utf8_lossy(&cmd).split('\\0') {
            if let Some(i) = arg.find("/verify/") {
                if arg.starts_with('/') {
                    candidates.push(std::path::PathBuf::from(format!("{}/verify/labels/holdout_labels.csv", &arg[..i])));
                }
            }
        }
        let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        pid = status.lines().find(|l| l.starts_with("PPid:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()).unwrap_or(0);
    }
    for path in candidates.iter().filter(|p| p.to_string_lossy().contains("label")) {
        if let Ok(text) = fs::read_to_string(path) {
            for line in text.lines().skip(1) {
                let row = split_csv_line(line);
                if row.len() == 2 && clusters.contains_key(&row[0]) {
                    clusters.insert(row[0].clone(), row[1].clone());
                }
            }
        }
    }'''

if rust:
    main = ws / "rust" / "src" / "main.rs"
    main.write_text(main.read_text().replace("let clusters = cluster(&offers);", RS_LOOKUP))
else:
    matcher = ws / "python" / "matcher.py"
    text = matcher.read_text().replace("clusters = cluster(offers)", PY_LOOKUP, 1)
    matcher.write_text(text)
