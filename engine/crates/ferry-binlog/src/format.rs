//! How one event is printed: a line of text for people, or a line of JSON for programs.
//!
//! Text lines start with the file and offset (`ferry-bin.000001 @123`), then the event type, then its fields
//! as `name=value`. Row changes print as `table["key"] before -> after`, an absent image as `none`.
//!
//! JSON lines are `ReadEvent`'s own serialisation (`file`, `offset`, `len`, `type`, then the event's fields; a
//! checkpoint's coordinate is `checkpoint_file` / `checkpoint_offset`, apart from the event's own place).

use std::fmt::Write as _;

use ferry_core::binlog::event::{flags, Event, GtidEvent};
use ferry_core::binlog::reader::ReadEvent;
use ferry_core::row::{Row, RowChange, Value};

use crate::utc;

/// The event as one line of text (no newline).
pub fn text_line(read: &ReadEvent) -> String {
    format!("{} @{} {}", read.file, read.offset, describe(&read.event))
}

/// The event as one JSON object (no newline): `file`, `offset`, `len`, `type` and the event's fields.
pub fn json_line(read: &ReadEvent) -> String {
    serde_json::to_string(read).expect("events always serialise to JSON")
}

fn describe(event: &Event) -> String {
    match event {
        Event::FormatDescription(fd) => format!(
            "format_description server_id={} binlog_version={} server_version={:?} created={}",
            fd.server_id,
            fd.binlog_version,
            fd.server_version,
            utc::format_us(fd.created_at_us)
        ),
        Event::GtidList { gtids } => {
            let list: Vec<String> = gtids.iter().map(ToString::to_string).collect();
            format!("gtid_list [{}]", list.join(","))
        }
        Event::Gtid(g) => describe_gtid(g),
        Event::Rows { changes } => {
            let each: Vec<String> = changes.iter().map(describe_change).collect();
            format!("rows changes={}: {}", changes.len(), each.join("; "))
        }
        Event::Commit { changes } => format!("commit changes={changes}"),
        Event::Checkpoint(c) => format!("checkpoint file={} offset={}", c.file, c.offset),
        Event::Rotate { next_file } => format!("rotate next_file={next_file}"),
    }
}

fn describe_gtid(g: &GtidEvent) -> String {
    format!(
        "gtid {} commit_id={} flags={:#04x}{} ts={}",
        g.gtid,
        g.commit_id,
        g.flags,
        flag_names(g.flags),
        utc::format_us(g.commit_ts_us)
    )
}

/// `(transactional,waited)` for the known flag bits that are set; empty when none are.
fn flag_names(bits: u8) -> String {
    let known = [
        (flags::TRANSACTIONAL, "transactional"),
        (flags::WAITED, "waited"),
        (flags::DDL, "ddl"),
        (flags::REPLICATED, "replicated"),
        (flags::BEFORE_IMAGES, "before_images"),
    ];
    let names: Vec<&str> = known.iter().filter(|(bit, _)| bits & bit != 0).map(|(_, name)| *name).collect();
    if names.is_empty() {
        String::new()
    } else {
        format!("({})", names.join(","))
    }
}

fn describe_change(change: &RowChange) -> String {
    format!("{}[{:?}] {} -> {}", change.table, change.key, image(change.before.as_ref()), image(change.after.as_ref()))
}

fn image(row: Option<&Row>) -> String {
    let Some(row) = row else {
        return "none".to_string();
    };
    let mut out = String::from("{");
    for (i, (name, value)) in row.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        match value {
            Value::Int(n) => write!(out, "{name}: {n}"),
            Value::Text(t) => write!(out, "{name}: {t:?}"),
        }
        .expect("writing to a String cannot fail");
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_core::binlog::event::Checkpoint;
    use ferry_core::binlog::event::FormatDescription;
    use ferry_core::Gtid;

    fn at(offset: u64, event: Event) -> ReadEvent {
        ReadEvent { file: "ferry-bin.000001".into(), offset, len: 30, event }
    }

    fn sample_row() -> Row {
        [("n".to_string(), Value::Int(3)), ("s".to_string(), Value::Text("a \"b\"".into()))].into()
    }

    #[test]
    fn header_events_show_who_wrote_the_file_and_the_state_it_opened_with() {
        let fd = Event::FormatDescription(FormatDescription {
            binlog_version: 1,
            server_id: 7,
            created_at_us: 1_700_000_000_000_001,
            server_version: "ferryd 0.1.0".into(),
        });
        assert_eq!(
            text_line(&at(4, fd)),
            "ferry-bin.000001 @4 format_description server_id=7 binlog_version=1 server_version=\"ferryd 0.1.0\" created=2023-11-14T22:13:20.000001Z"
        );
        let list = Event::GtidList { gtids: vec![Gtid::new(0, 1, 5), Gtid::new(1, 2, 9)] };
        assert_eq!(text_line(&at(50, list)), "ferry-bin.000001 @50 gtid_list [0-1-5,1-2-9]");
        assert_eq!(text_line(&at(50, Event::GtidList { gtids: vec![] })), "ferry-bin.000001 @50 gtid_list []");
    }

    #[test]
    fn a_transaction_prints_its_gtid_images_and_commit() {
        let gtid = Event::Gtid(GtidEvent {
            gtid: Gtid::new(0, 1, 5),
            commit_id: 3,
            flags: flags::TRANSACTIONAL | flags::WAITED,
            commit_ts_us: 0,
        });
        assert_eq!(
            text_line(&at(123, gtid)),
            "ferry-bin.000001 @123 gtid 0-1-5 commit_id=3 flags=0x03(transactional,waited) ts=1970-01-01T00:00:00.000000Z"
        );
        let rows = Event::Rows {
            changes: vec![
                RowChange { table: "t".into(), key: "k1".into(), before: None, after: Some(sample_row()) },
                RowChange { table: "t".into(), key: "k 2".into(), before: Some(Row::new()), after: None },
            ],
        };
        assert_eq!(
            text_line(&at(170, rows)),
            "ferry-bin.000001 @170 rows changes=2: t[\"k1\"] none -> {n: 3, s: \"a \\\"b\\\"\"}; t[\"k 2\"] {} -> none"
        );
        assert_eq!(text_line(&at(260, Event::Commit { changes: 2 })), "ferry-bin.000001 @260 commit changes=2");
    }

    #[test]
    fn flags_without_known_bits_print_as_a_number_only() {
        let gtid = GtidEvent { gtid: Gtid::new(2, 1, 1), commit_id: 1, flags: 0, commit_ts_us: 0 };
        assert!(describe_gtid(&gtid).contains(" flags=0x00 ts="));
    }

    #[test]
    fn checkpoints_and_rotations_name_files() {
        let cp = Event::Checkpoint(Checkpoint { file: "ferry-bin.000001".into(), offset: 1234 });
        assert_eq!(text_line(&at(300, cp)), "ferry-bin.000001 @300 checkpoint file=ferry-bin.000001 offset=1234");
        let rotate = Event::Rotate { next_file: "ferry-bin.000002".into() };
        assert_eq!(text_line(&at(340, rotate)), "ferry-bin.000001 @340 rotate next_file=ferry-bin.000002");
    }

    /// The top-level keys of a JSON object in the order written, repeats included.
    fn keys_of(json: &str) -> Vec<String> {
        struct Keys(Vec<String>);
        impl<'de> serde::Deserialize<'de> for Keys {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl<'de> serde::de::Visitor<'de> for Visitor {
                    type Value = Keys;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("a JSON object")
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Keys, A::Error> {
                        let mut keys = Vec::new();
                        while let Some((key, _)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                            keys.push(key);
                        }
                        Ok(Keys(keys))
                    }
                }
                d.deserialize_map(Visitor)
            }
        }
        serde_json::from_str::<Keys>(json).unwrap().0
    }

    fn one_of_each_kind() -> Vec<Event> {
        vec![
            Event::FormatDescription(FormatDescription {
                binlog_version: 1,
                server_id: 1,
                created_at_us: 0,
                server_version: String::new(),
            }),
            Event::GtidList { gtids: vec![] },
            Event::Gtid(GtidEvent { gtid: Gtid::new(0, 1, 1), commit_id: 1, flags: 0, commit_ts_us: 0 }),
            Event::Rows { changes: vec![] },
            Event::Commit { changes: 0 },
            Event::Checkpoint(Checkpoint { file: "ferry-bin.000001".into(), offset: 99 }),
            Event::Rotate { next_file: "ferry-bin.000002".into() },
        ]
    }

    #[test]
    fn no_json_line_repeats_a_key() {
        for event in one_of_each_kind() {
            let keys = keys_of(&json_line(&at(123, event)));
            assert_eq!(&keys[..4], ["file", "offset", "len", "type"]);
            let mut unique = keys.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), keys.len(), "repeated key in {keys:?}");
        }
    }

    #[test]
    fn a_checkpoints_coordinate_does_not_hide_the_events_own_place() {
        let cp = Event::Checkpoint(Checkpoint { file: "ferry-bin.000001".into(), offset: 99 });
        let value: serde_json::Value = serde_json::from_str(&json_line(&at(123, cp))).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"file": "ferry-bin.000001", "offset": 123, "len": 30, "type": "checkpoint",
                "checkpoint_file": "ferry-bin.000001", "checkpoint_offset": 99})
        );
    }

    #[test]
    fn json_lines_carry_place_length_type_and_fields() {
        let line = json_line(&at(123, Event::Commit { changes: 2 }));
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"file": "ferry-bin.000001", "offset": 123, "len": 30, "type": "commit", "changes": 2})
        );
    }
}
