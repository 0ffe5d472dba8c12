//! Parsing a line into JSON with a bound on what it may expand to.
//!
//! A line's parsed tree can be many times its size: one 8 MiB line holding 2.8 million
//! content blocks took the sync worker to 1.4 GiB. Long lines are parsed with every array
//! and object cut to [`MAX_ITEMS`] entries (the rest is skipped without being built); the
//! line itself is stored whole in `records`, so nothing is lost, only not parsed into parts.

use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Entries kept per array or object of a long line.
pub const MAX_ITEMS: usize = 10_000;
/// Lines shorter than this cannot hold more than [`MAX_ITEMS`] entries in one array (every
/// entry takes at least two bytes): they are parsed the ordinary way.
const CAPPED_FROM_BYTES: usize = 2 * MAX_ITEMS;

/// A line's JSON, and whether some array or object in it was cut.
pub fn parse_line(text: &str) -> serde_json::Result<(Value, bool)> {
    if text.len() < CAPPED_FROM_BYTES {
        return serde_json::from_str(text).map(|v| (v, false));
    }
    let cut = Cell::new(false);
    let mut de = serde_json::Deserializer::from_str(text);
    let v = Capped { cut: &cut }.deserialize(&mut de)?;
    de.end()?;
    Ok((v, cut.get()))
}

#[derive(Clone, Copy)]
struct Capped<'a> {
    cut: &'a Cell<bool>,
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
        while out.len() < MAX_ITEMS {
            match seq.next_element_seed(self)? {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {
            self.cut.set(true);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while out.len() < MAX_ITEMS {
            match map.next_key::<String>()? {
                Some(k) => {
                    let v = map.next_value_seed(self)?;
                    out.insert(k, v);
                }
                None => return Ok(Value::Object(out)),
            }
        }
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
            self.cut.set(true);
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
        assert!(cut);
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
        assert!(cut);
        assert_eq!(mine["b"], theirs["b"]);
        assert!(parse_line(&format!("{small} trailing")).is_err());
        assert!(parse_line(&format!("{{\"x\": [{}", "1,".repeat(20_000))).is_err());
    }
}
