use super::*;

fn decode_bytes(bytes: &[u8]) -> Result<Doc, Error> {
    decode(bytes, "t.pickle")
}

/// The error's text and the byte offset it names.
fn error_of(bytes: &[u8]) -> (String, u64) {
    match decode_bytes(bytes) {
        Ok(_) => panic!("expected an error"),
        Err(e) => {
            let offset = e
                .location()
                .and_then(|l| l.byte_offset)
                .expect("a byte offset");
            (e.to_string(), offset)
        }
    }
}

/// `{'a': [1, -2, 2**40, True, None], 'b': ('x', 1.5)}` as Python 3.11 pickles it with
/// protocol 4, byte for byte (MEMOIZE after each string and container; FRAME first).
fn sample_protocol_4() -> Vec<u8> {
    let mut body = vec![0x7d, 0x94, b'('];
    body.extend([0x8c, 1, b'a', 0x94, b']', 0x94, b'(']);
    body.extend([b'K', 1, b'J', 0xfe, 0xff, 0xff, 0xff]);
    body.extend([0x8a, 6, 0, 0, 0, 0, 0, 1, 0x88, b'N', b'e']);
    body.extend([0x8c, 1, b'b', 0x94, 0x8c, 1, b'x', 0x94]);
    body.extend([b'G', 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0x86, 0x94, b'u', b'.']);
    let mut out = vec![0x80, 4, 0x95];
    out.extend((body.len() as u64).to_le_bytes());
    out.extend(body);
    out
}

#[test]
fn decodes_plain_data_of_protocol_4() {
    let doc = decode_bytes(&sample_protocol_4()).unwrap();
    let root = doc.root();
    let a = doc.get(root, "a").unwrap();
    let View::List(items) = doc.view(a) else {
        panic!("a is not a list")
    };
    let views: Vec<View> = items.iter().map(|v| doc.view(*v)).collect();
    assert_eq!(
        views,
        vec![
            View::Int(1),
            View::Int(-2),
            View::Int(1 << 40),
            View::Bool(true),
            View::None
        ]
    );
    let View::Tuple(b) = doc.view(doc.get(root, "b").unwrap()) else {
        panic!("b is not a tuple")
    };
    assert_eq!(doc.view(b[0]), View::Str("x"));
    assert_eq!(doc.view(b[1]), View::Float(1.5));
    assert_eq!(doc.get(root, "missing"), None);
}

#[test]
fn memo_shares_containers_like_python() {
    // [d, d] where d = {} and then d['k'] = 1 through the second reference (protocol 2 BINPUT/BINGET).
    let bytes = [
        0x80, 2, b']', b'q', 0, b'(', b'}', b'q', 1, b'h', 1, b'e', b'h', 1, 0x8c, 1, b'k', b'K',
        1, b's', b'0', b'.',
    ];
    let doc = decode_bytes(&bytes).unwrap();
    let View::List(items) = doc.view(doc.root()) else {
        panic!("root is not a list")
    };
    assert_eq!(items.len(), 2);
    assert_eq!(doc.identity(items[0]), doc.identity(items[1]));
    assert_eq!(doc.view(doc.get(items[0], "k").unwrap()), View::Int(1));
}

#[test]
fn integers_at_every_width() {
    let cases: Vec<(Vec<u8>, View)> = vec![
        (vec![0x8a, 0], View::Int(0)),
        (vec![0x8a, 1, 0xff], View::Int(-1)),
        // 2**47 needs 7 bytes with its sign bit; the 6-byte 00..80 form is negative.
        (vec![0x8a, 7, 0, 0, 0, 0, 0, 0x80, 0], View::Int(1 << 47)),
        (vec![0x8a, 6, 0, 0, 0, 0, 0, 0x80], View::Int(-(1 << 47))),
        (vec![0x8a, 8, 0, 0, 0, 0, 0, 0, 0, 0x40], View::Int(1 << 62)),
        (
            vec![0x8a, 8, 0, 0, 0, 0, 0, 0, 0, 0x80],
            View::Int(i64::MIN),
        ),
        (vec![b'M', 0x34, 0x12], View::Int(0x1234)),
        (vec![b'J', 0, 0, 0, 0x80], View::Int(i32::MIN as i64)),
    ];
    for (ops, expected) in cases {
        let mut bytes = vec![0x80, 4];
        bytes.extend(&ops);
        bytes.push(b'.');
        let doc = decode_bytes(&bytes).unwrap();
        assert_eq!(doc.view(doc.root()), expected, "{ops:02x?}");
    }
    let doc = decode_bytes(&[0x80, 4, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 1, b'.']).unwrap();
    assert_eq!(
        doc.view(doc.root()),
        View::BigInt(&[0, 0, 0, 0, 0, 0, 0, 0, 1])
    );
}

#[test]
fn refuses_every_code_executing_opcode_with_its_name_and_offset() {
    for (op, name) in [
        (b'c', "GLOBAL"),
        (0x93, "STACK_GLOBAL"),
        (b'R', "REDUCE"),
        (b'b', "BUILD"),
        (b'i', "INST"),
        (b'o', "OBJ"),
        (0x81, "NEWOBJ"),
        (0x92, "NEWOBJ_EX"),
        (0x82, "EXT1"),
        (0x83, "EXT2"),
        (0x84, "EXT4"),
        (b'P', "PERSID"),
        (b'Q', "BINPERSID"),
    ] {
        let (message, offset) = error_of(&[0x80, 4, b'N', op, b'.']);
        assert!(
            message.contains(&format!("refused opcode {name} ")),
            "{message}"
        );
        assert_eq!(offset, 3);
        assert!(
            message.starts_with("t.pickle: byte offset 3: data error"),
            "{message}"
        );
    }
}

#[test]
fn refuses_the_classic_os_system_payload() {
    // cos\nsystem\n(S'echo hi'\ntR.  (protocol 0)
    let (message, offset) = error_of(b"cos\nsystem\n(S'echo hi'\ntR.");
    assert!(message.contains("GLOBAL"), "{message}");
    assert_eq!(offset, 0);
}

#[test]
fn truncation_anywhere_is_a_located_error() {
    let full = sample_protocol_4();
    for cut in 0..full.len() {
        let (message, offset) = error_of(&full[..cut]);
        assert!(message.contains("truncated"), "cut {cut}: {message}");
        assert!(offset as usize <= cut, "cut {cut}: offset {offset}");
    }
}

#[test]
fn forged_lengths_do_not_allocate_beyond_the_input() {
    // BINUNICODE8 claiming 2**62 bytes, followed by 3 bytes.
    let mut bytes = vec![0x80, 4, 0x8d];
    bytes.extend((1u64 << 62).to_le_bytes());
    bytes.extend(b"abc");
    let (message, offset) = error_of(&bytes);
    assert!(
        message.contains("truncated") && message.contains("BINUNICODE8"),
        "{message}"
    );
    assert_eq!(offset, 2);
    // A sparse memo index far beyond the input.
    let (message, _) = error_of(&[0x80, 2, b'N', b'r', 0xff, 0xff, 0xff, 0x7f, b'.']);
    assert!(message.contains("memo index out of range"), "{message}");
}

#[test]
fn structural_errors_name_the_opcode() {
    let cases: Vec<(&[u8], &str)> = vec![
        (&[0x80, 4, b'.'], "STOP: the stack is empty"),
        (&[0x80, 4, b'N', b'u', b'.'], "SETITEMS without a MARK"),
        (
            &[0x80, 4, b'N', b'(', b'N', b'e', b'.'],
            "APPENDS: target is a None",
        ),
        (&[0x80, 4, b'h', 7, b'.'], "no memo entry 7"),
        (&[0x80, 4, b'}', b'(', b'N', b'u', b'.'], "odd number"),
        (&[0x80, 1, b'N', b'.'], "protocol 1 is not supported"),
        (&[0x80, 4, 0xff], "invalid pickle opcode 0xff"),
        (&[0x80, 4, b'I'], "opcode INT (0x49) is not supported"),
        (&[0x80, 4, 0x8c, 2, 0xc3, 0x28, b'.'], "invalid UTF-8"),
    ];
    for (bytes, expected) in cases {
        let (message, _) = error_of(bytes);
        assert!(message.contains(expected), "{bytes:02x?}: {message}");
    }
}

#[test]
fn an_io_error_is_located() {
    struct Failing;
    impl Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk on fire"))
        }
    }
    let e = decode(Failing, "x.pickle").err().unwrap();
    assert!(e.to_string().contains("disk on fire"), "{e}");
}

/// Deterministic xorshift, so a failing case can be replayed from its seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Thousands of corrupted corpus files (flipped, overwritten, inserted and deleted bytes, cut
/// anywhere): each decodes or fails with a located error, never a panic. Corruption inside the
/// values may still decode; the snapshot reader then either accepts or refuses the shape.
#[test]
fn corrupted_corpus_files_never_panic() {
    let files = crate::snapshot_format::corpus::all();
    // Keep each case cheap: a prefix that still holds segments, blocks and trace entries.
    for (name, bytes) in &files {
        let base = &bytes[..bytes.len().min(60_000)];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ base.len() as u64);
        for case in 0..400 {
            let mut data = base.to_vec();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(data.len());
                match rng.below(4) {
                    0 => data[at] ^= 1 << rng.below(8),
                    1 => data[at] = rng.next() as u8,
                    2 => data.insert(at, rng.next() as u8),
                    _ => {
                        data.remove(at);
                    }
                }
            }
            if case % 3 == 0 {
                let cut = rng.below(data.len());
                data.truncate(cut);
            }
            match crate::snapshot_format::read_snapshot(&data[..], name) {
                Ok(snapshot) => {
                    let _ = crate::snapshot_format::to_timeline(&snapshot);
                    if case % 20 == 0 {
                        let _ = crate::snapshot_format::replay::replay(&snapshot);
                    }
                }
                Err(e) => {
                    let location = e.location().expect("located");
                    assert_eq!(location.file, *name);
                }
            }
        }
    }
}

#[test]
fn truncated_corpus_files_give_the_offset_where_input_ended() {
    for (name, bytes) in crate::snapshot_format::corpus::all() {
        let cut = bytes.len() / 2;
        let e = decode(&bytes[..cut], name).err().unwrap();
        let text = e.to_string();
        assert!(text.contains("truncated"), "{text}");
        let offset = e.location().unwrap().byte_offset.unwrap() as usize;
        assert!(
            offset <= cut && offset + 601 > cut,
            "{name}: {offset} vs {cut}"
        );
    }
}
