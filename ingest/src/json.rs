//! Parsing a line into JSON with a bound on what it may expand to.
//!
//! A line's parsed tree can be many times its size: one 8 MiB line holding 2.8 million
//! content blocks took the sync worker to 1.4 GiB, and a 16 MB Gemini chat of 2000 messages
//! each with 2000 empty tool calls took it past 2 GiB (no one list was long: their product
//! was). Long lines are parsed with every array and object cut to [`MAX_ITEMS`] entries,
//! and the line as a whole to [`MAX_LINE_ITEMS`] (the rest is skipped without being built:
//! a chat's messages past that are not parsed); the line itself is stored whole in
//! `records`, so nothing is lost, only not parsed into parts.

use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Entries kept per array or object of a long line.
pub const MAX_ITEMS: usize = 10_000;
/// Entries kept in all the arrays and objects of a long line, nested ones too: each may
/// become a part (a few hundred bytes), so this bounds what one line costs, whatever its
/// lists multiply to.
pub const MAX_LINE_ITEMS: usize = 500_000;
/// Lines shorter than this cannot hold more than [`MAX_ITEMS`] entries in one array (every
/// entry takes at least two bytes): they are parsed the ordinary way.
const CAPPED_FROM_BYTES: usize = 2 * MAX_ITEMS;

/// Why a line was parsed in part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Some array or object held more than [`MAX_ITEMS`] entries.
    List,
    /// The line held more than [`MAX_LINE_ITEMS`] entries in all: what follows them was
    /// not parsed.
    Line,
}

/// A line's JSON, and whether (and how) some of it was cut.
pub fn parse_line(text: &str) -> serde_json::Result<(Value, Option<Cut>)> {
    if text.len() < CAPPED_FROM_BYTES {
        return serde_json::from_str(text).map(|v| (v, None));
    }
    let cut = Cell::new(None);
    let left = Cell::new(MAX_LINE_ITEMS);
    let mut de = serde_json::Deserializer::from_str(text);
    let v = Capped {
        cut: &cut,
        left: &left,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((v, cut.get()))
}

#[derive(Clone, Copy)]
struct Capped<'a> {
    cut: &'a Cell<Option<Cut>>,
    /// Entries the line may still keep.
    left: &'a Cell<usize>,
}

impl Capped<'_> {
    /// Take one entry from what the line may keep: `false` when none is left.
    fn take(&self) -> bool {
        let left = self.left.get();
        self.left.set(left.saturating_sub(1));
        left > 0
    }

    /// Give back the entry taken for the end of a list.
    fn give_back(&self) {
        self.left.set(self.left.get() + 1);
    }

    /// An entry skipped: past the line's cap, or past its list's.
    fn skipped(&self) {
        if self.left.get() == 0 {
            self.cut.set(Some(Cut::Line));
        } else if self.cut.get().is_none() {
            self.cut.set(Some(Cut::List));
        }
    }
}

impl<'de> DeserializeSeed<'de> for Capped<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Capped<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while out.len() < MAX_ITEMS && self.take() {
            match seq.next_element_seed(self)? {
                Some(v) => out.push(v),
                None => {
                    self.give_back();
                    return Ok(Value::Array(out));
                }
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {
            self.skipped();
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while out.len() < MAX_ITEMS && self.take() {
            match map.next_key::<String>()? {
                Some(k) => {
                    let v = map.next_value_seed(self)?;
                    out.insert(k, v);
                }
                None => {
                    self.give_back();
                    return Ok(Value::Object(out));
                }
            }
        }
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
            self.skipped();
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_keep_their_first_items_and_say_so() {
        let blocks: Vec<String> = (0..MAX_ITEMS + 500)
            .map(|i| format!(r#"{{"type":"text","text":"b{i}"}}"#))
            .collect();
        let line = format!(
            r#"{{"type":"user","message":{{"content":[{}]}},"tail":1.5}}"#,
            blocks.join(",")
        );
        let (v, cut) = parse_line(&line).unwrap();
        assert_eq!(cut, Some(Cut::List));
        let content = v["message"]["content"].as_array().unwrap();
        assert_eq!(content.len(), MAX_ITEMS);
        assert_eq!(content[0]["text"], "b0");
        assert_eq!(v["tail"], 1.5, "what follows the cut array is parsed");
        // The same value as serde_json's own parse, below the cap.
        let small = format!(
            r#"{{"a":[{}],"b":{{"c":null,"d":true,"e":-3}}}}"#,
            "1,".repeat(12_000) + "2"
        );
        let (mine, cut) = parse_line(&small).unwrap();
        let theirs: Value = serde_json::from_str(&small).unwrap();
        assert_eq!(cut, Some(Cut::List));
        assert_eq!(mine["b"], theirs["b"]);
        assert!(parse_line(&format!("{small} trailing")).is_err());
        assert!(parse_line(&format!("{{\"x\": [{}", "1,".repeat(20_000))).is_err());
    }

    /// Entries in a parsed tree, nested ones too.
    fn entries(v: &Value) -> usize {
        match v {
            Value::Array(a) => a.len() + a.iter().map(entries).sum::<usize>(),
            Value::Object(o) => o.len() + o.values().map(entries).sum::<usize>(),
            _ => 0,
        }
    }

    #[test]
    fn nested_lists_are_capped_by_their_product() {
        // 1200 lists of 1200 empty objects: no list is long, all of them are.
        let inner = format!("[{}]", vec!["{}"; 1200].join(","));
        let line = format!(
            r#"{{"messages":[{}],"tail":1}}"#,
            vec![inner.as_str(); 1200].join(",")
        );
        let (v, cut) = parse_line(&line).unwrap();
        assert_eq!(cut, Some(Cut::Line));
        assert_eq!(entries(&v), MAX_LINE_ITEMS);
        let kept = v["messages"].as_array().unwrap();
        assert_eq!(kept[0].as_array().unwrap().len(), 1200);
        assert!(kept.len() < 1200);
        assert_eq!(v.get("tail"), None, "what follows the cap is not parsed");
        // Under the cap, nothing is cut: the same tree as serde_json's.
        let fits = format!(r#"{{"m":[{}],"t":1}}"#, vec![inner.as_str(); 300].join(","));
        let (v, cut) = parse_line(&fits).unwrap();
        assert_eq!(cut, None);
        assert_eq!(v, serde_json::from_str::<Value>(&fits).unwrap());
    }
}
