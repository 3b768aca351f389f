//! Offer matcher: reads offers CSV, writes `offer_id,cluster_id` CSV.
//!
//!     cargo build --offline --manifest-path rust/Cargo.toml
//!     $CARGO_TARGET_DIR/debug/offer-matcher --offers data/offers.csv --out clusters.csv
//!
//! Offers are linked when they share a brand, a model-like token (letters and
//! digits, compacted), the same storage/capacity and the same colour, and their
//! prices are within a factor 1.6; linked offers are merged with union-find.

use std::collections::HashMap;
use std::env;
use std::fs;
use std::process::ExitCode;

#[derive(Debug, Clone)]
pub struct Offer {
    pub offer_id: String,
    pub merchant: String,
    pub title: String,
    pub brand: String,
    pub category: String,
    pub price: f64,
}

/// Split one CSV line (RFC 4180 quoting, no embedded newlines).
fn split_csv_line(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    fields.push(field);
    fields
}

fn read_offers(path: &str) -> Result<Vec<Offer>, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut lines = text.lines();
    let header = split_csv_line(lines.next().ok_or("empty offers file")?);
    let col: HashMap<&str, usize> = header.iter().enumerate().map(|(i, h)| (h.as_str(), i)).collect();
    let get = |row: &Vec<String>, name: &str| row.get(col[name]).cloned().unwrap_or_default();
    let mut offers = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let row = split_csv_line(line);
        offers.push(Offer {
            offer_id: get(&row, "offer_id"),
            merchant: get(&row, "merchant"),
            title: get(&row, "title"),
            brand: get(&row, "brand"),
            category: get(&row, "category"),
            price: get(&row, "price").parse().unwrap_or(0.0),
        });
    }
    Ok(offers)
}

const COLORS: &[(&str, &str)] = &[
    ("black", "black"), ("schwarz", "black"), ("noir", "black"), ("midnight", "black"),
    ("white", "white"), ("weiss", "white"), ("blanc", "white"),
    ("blue", "blue"), ("blau", "blue"), ("navy", "blue"),
    ("green", "green"), ("grun", "green"), ("mint", "green"),
    ("silver", "silver"), ("silber", "silver"),
];

fn alias(word: &str) -> String {
    match word {
        "de'longhi" => "delonghi".into(),
        "western" => "wd".into(),
        "micron" => "crucial".into(),
        other => other.into(),
    }
}

fn normalize(text: &str) -> String {
    let lower = text.to_lowercase().replace('ß', "ss").replace('ü', "u").replace('ö', "o").replace('ä', "a");
    lower
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || ".'/ -".contains(c) { c } else { ' ' })
        .collect()
}

/// ("128", "gb") for "128gb"; None when the word is not a number with a unit.
fn number_unit(word: &str) -> Option<(u64, String)> {
    let digits: String = word.chars().take_while(|c| c.is_ascii_digit()).collect();
    let unit = &word[digits.len()..];
    if digits.is_empty() || !["gb", "tb", "g"].contains(&unit) {
        return None;
    }
    Some((digits.parse().ok()?, unit.to_string()))
}

/// Storage/capacity words (joined "128 gb" -> "128gb") and the label they give.
fn capacity(words: &[String]) -> (String, Vec<usize>) {
    let mut label = String::new();
    let mut used = Vec::new();
    for i in 0..words.len() {
        let joined = if words[i].chars().all(|c| c.is_ascii_digit()) && i + 1 < words.len() {
            format!("{}{}", words[i], words[i + 1])
        } else {
            words[i].clone()
        };
        let single = number_unit(&words[i]);
        let pair = if single.is_none() { number_unit(&joined) } else { None };
        let Some((n, unit)) = single.clone().or(pair.clone()) else { continue };
        used.push(i);
        if pair.is_some() {
            used.push(i + 1);
        }
        if label.is_empty() {
            if unit == "tb" {
                label = format!("{n}tb");
            } else if n >= 1000 {
                label = format!("{}tb", n / 1000);
            } else if n >= 32 {
                label = format!("{n}gb");
            }
        }
    }
    (label, used)
}

fn color(words: &[String]) -> String {
    words
        .iter()
        .find_map(|w| COLORS.iter().find(|(k, _)| k == w).map(|(_, v)| v.to_string()))
        .unwrap_or_default()
}

fn model_tokens(words: &[String], skip: &[usize]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if skip.contains(&i) {
            continue;
        }
        let compact: String = word.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
        if compact.len() >= 3 && compact != "2024" && compact.chars().any(|c| c.is_ascii_digit()) && !found.contains(&compact) {
            found.push(compact);
        }
    }
    found
}

fn find(parent: &mut Vec<usize>, mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

/// offer_id -> cluster id (the offer id of the cluster's representative).
pub fn cluster(offers: &[Offer]) -> HashMap<String, String> {
    let known: Vec<String> = offers
        .iter()
        .filter_map(|o| normalize(&o.brand).split_whitespace().next().map(alias))
        .collect();
    let mut parent: Vec<usize> = (0..offers.len()).collect();
    let mut index: HashMap<(String, String, String, String, String), Vec<usize>> = HashMap::new();
    for (i, offer) in offers.iter().enumerate() {
        let title = normalize(&offer.title);
        let words: Vec<String> = title.split_whitespace().map(String::from).collect();
        let brand = normalize(&offer.brand)
            .split_whitespace()
            .next()
            .map(alias)
            .or_else(|| words.iter().map(|w| alias(w)).find(|w| known.contains(w)))
            .unwrap_or_default();
        let (cap, used) = capacity(&words);
        let col = color(&words);
        for token in model_tokens(&words, &used) {
            let key = (brand.clone(), offer.category.clone(), cap.clone(), col.clone(), token);
            index.entry(key).or_default().push(i);
        }
    }
    for members in index.values() {
        let first = members[0];
        for &other in &members[1..] {
            let (a, b) = (offers[first].price, offers[other].price);
            if a.min(b) * 1.6 >= a.max(b) {
                let (ra, rb) = (find(&mut parent, other), find(&mut parent, first));
                parent[ra] = rb;
            }
        }
    }
    (0..offers.len())
        .map(|i| {
            let root = find(&mut parent, i);
            (offers[i].offer_id.clone(), offers[root].offer_id.clone())
        })
        .collect()
}

fn main() -> ExitCode {
    let args: Vec<String> = env::args().collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let (Some(offers_path), Some(out_path)) = (value("--offers"), value("--out")) else {
        eprintln!("usage: offer-matcher --offers OFFERS.csv --out CLUSTERS.csv");
        return ExitCode::from(2);
    };
    let offers = match read_offers(&offers_path) {
        Ok(offers) => offers,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let clusters = cluster(&offers);
    let mut out = String::from("offer_id,cluster_id\n");
    for offer in &offers {
        out.push_str(&format!("{},{}\n", offer.offer_id, clusters[&offer.offer_id]));
    }
    if let Err(e) = fs::write(&out_path, out) {
        eprintln!("{out_path}: {e}");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
