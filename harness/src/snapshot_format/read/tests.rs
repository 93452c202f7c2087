use super::*;
use crate::snapshot_format::corpus;

#[test]
fn corpus_files_read_and_end_at_their_final_segments() {
    for (name, bytes) in corpus::all() {
        let snapshot = read_snapshot(&bytes[..], name).unwrap();
        assert_eq!(snapshot.device_traces.len(), 1, "{name}");
        assert!(snapshot.allocator_settings.is_some(), "{name}");
        // Blocks tile every segment (an invariant of real files).
        for s in &snapshot.segments {
            assert_eq!(
                s.blocks.iter().map(|b| b.size).sum::<u64>(),
                s.total_size,
                "{name}"
            );
            let mut next = s.address;
            for b in &s.blocks {
                assert_eq!(b.address, next, "{name}");
                next += b.size;
            }
        }
        let imported = to_timeline(&snapshot);
        let t = &imported.timeline;
        let last = t.events.last().unwrap();
        let final_allocated: u64 = snapshot.segments.iter().map(|s| s.allocated_size).sum();
        let final_reserved: u64 = snapshot.segments.iter().map(|s| s.total_size).sum();
        assert_eq!(last.allocated, final_allocated, "{name}");
        assert_eq!(last.reserved, final_reserved, "{name}");
        assert!(t.peak_allocated() >= final_allocated, "{name}");
        assert!(
            t.peak_reserved() <= final_reserved,
            "{name}: no segment_free in corpus"
        );
        assert_eq!(t.events.len(), snapshot.device_traces[0].len(), "{name}");
        // Stacks were interned: far fewer than trace entries, and frames are torch's.
        assert!(t.stacks.len() < t.events.len(), "{name}");
        let frames = t.stacks.get(t.events[0].stack);
        assert!(!frames.is_empty(), "{name}");
        eprintln!(
            "{name}: {} events, {} stacks, peak allocated {}, peak reserved {}, start {} / {}",
            t.events.len(),
            t.stacks.len(),
            t.peak_allocated(),
            t.peak_reserved(),
            imported.initial_allocated,
            imported.initial_reserved
        );
    }
}

/// A snapshot with its stacks spelled out: the numbering of stacks depends on the order in
/// which a reader meets them, the frames do not.
fn resolved(snapshot: &Snapshot) -> (Vec<Segment>, Vec<Vec<TraceEntry>>, Vec<Vec<Frame>>) {
    let mut frames = Vec::new();
    let mut number = |id: StackId| {
        frames.push(snapshot.stacks.get(id).to_vec());
        StackId(frames.len() as u32)
    };
    let segments = snapshot
        .segments
        .iter()
        .map(|s| {
            let mut s = s.clone();
            s.frames = number(s.frames);
            for b in &mut s.blocks {
                b.frames = number(b.frames);
            }
            s
        })
        .collect();
    let traces = snapshot
        .device_traces
        .iter()
        .map(|t| {
            t.iter()
                .map(|e| {
                    let mut e = e.clone();
                    e.frames = e.frames.map(&mut number);
                    e
                })
                .collect()
        })
        .collect();
    (segments, traces, frames)
}

/// Both readers give the same snapshot: same segments, entries and frames.
fn assert_streaming_matches_whole(bytes: &[u8], name: &str) {
    let streamed = resolved(&read_snapshot(bytes, name).unwrap());
    let whole = resolved(&read_snapshot_whole(bytes, name).unwrap());
    assert!(streamed.0 == whole.0, "{name}: segments differ");
    assert!(streamed.1 == whole.1, "{name}: traces differ");
    assert!(streamed.2 == whole.2, "{name}: frames differ");
    assert!(!streamed.1.is_empty(), "{name}");
}

#[test]
fn streaming_conversion_equals_reading_the_whole_tree() {
    for (name, bytes) in corpus::all() {
        assert_streaming_matches_whole(&bytes, name);
    }
    // Always (without the corpus): a trace of 2,500 entries, written in batches of 1,000,
    // whose stacks repeat across batches.
    let mut snapshot = Snapshot::default();
    let stacks: Vec<StackId> = (0..7)
        .map(|i| {
            snapshot.stacks.intern(vec![Frame {
                file: format!("train_{i}.py").into(),
                line: i,
                name: "step".into(),
            }])
        })
        .collect();
    let trace = (0..2500u64)
        .map(|i| TraceEntry {
            action: if i % 2 == 0 {
                TraceAction::Alloc
            } else {
                TraceAction::FreeCompleted
            },
            addr: 0x7f00_0000_0000 + (i / 2) * 512,
            size: 512,
            stream: 0,
            time_us: Some(i as i64),
            device_free: None,
            frames: Some(stacks[(i % 7) as usize]),
        })
        .collect::<Vec<_>>();
    snapshot.device_traces.push(trace.clone());
    let bytes = crate::snapshot_format::encode_snapshot(&snapshot);
    assert_streaming_matches_whole(&bytes, "synthetic.pickle");
    let back = read_snapshot(&bytes[..], "synthetic.pickle").unwrap();
    assert_eq!(back.device_traces[0].len(), 2500);
    for (read, written) in back.device_traces[0].iter().zip(&trace) {
        assert_eq!(
            back.stacks.get(read.frames.unwrap()),
            snapshot.stacks.get(written.frames.unwrap())
        );
        assert_eq!((read.addr, read.time_us), (written.addr, written.time_us));
    }
}

/// A protocol-2 pickle by hand: `{segments: [], device_traces: [[e1], [e2]]}` where the
/// trace's two entries come in two `APPENDS` batches; `second` is how entry 2 is written.
fn two_batches(second: &[u8]) -> Vec<u8> {
    let mut p = b"\x80\x02}(\x8c\x08segments]\x8c\x0ddevice_traces](](".to_vec();
    // Entry 1 (memo 2), its frames list (memo 1) with one frame dict.
    p.extend(b"}q\x02(\x8c\x06action\x8c\x05alloc\x8c\x04addrK\x10\x8c\x04sizeK\x20");
    p.extend(b"\x8c\x06frames]q\x01(}(\x8c\x08filename\x8c\x04a.py\x8c\x04lineK\x07");
    p.extend(b"\x8c\x04name\x8c\x01fueu");
    p.extend(b"e(");
    p.extend(second);
    p.extend(b"eeu.");
    p
}

#[test]
fn a_frames_list_shared_across_batches_is_converted_once() {
    let entry2 =
        b"}(\x8c\x06action\x8c\x0efree_completed\x8c\x04addrK\x10\x8c\x04sizeK\x20\x8c\x06framesh\x01u";
    let bytes = two_batches(entry2);
    let snapshot = read_snapshot(&bytes[..], "shared.pickle").unwrap();
    let trace = &snapshot.device_traces[0];
    assert_eq!(trace.len(), 2);
    assert_eq!(trace[1].action, TraceAction::FreeCompleted);
    assert_eq!(trace[0].frames, trace[1].frames);
    let frames = snapshot.stacks.get(trace[1].frames.unwrap());
    assert_eq!(
        (&*frames[0].file, frames[0].line, &*frames[0].name),
        ("a.py", 7, "f")
    );
    assert_streaming_matches_whole(&bytes, "shared.pickle");
}

#[test]
fn a_trace_entry_met_again_after_its_release_is_refused() {
    // Entry 1 appended a second time.
    let again = read_snapshot(&two_batches(b"h\x02")[..], "again.pickle")
        .unwrap_err()
        .to_string();
    assert!(again.starts_with("again.pickle: "), "{again}");
    assert!(again.contains("device_traces[0][1]"), "{again}");
    assert!(again.contains("already read"), "{again}");
    // Entry 1 changed after it was converted: a decoding error at the SETITEM.
    let changed = two_batches(b"h\x02\x8c\x04sizeK\x40s0");
    let e = read_snapshot(&changed[..], "changed.pickle")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("SETITEM: the dict was already read and released"),
        "{e}"
    );
    assert!(e.contains("byte offset"), "{e}");
}

#[test]
fn a_trace_list_read_as_something_else_is_refused() {
    // `segments` is written after `device_traces` and names device 0's trace list (memo 3).
    let mut p = b"\x80\x02}(\x8c\x0ddevice_traces](]q\x03(".to_vec();
    p.extend(b"}(\x8c\x06action\x8c\x05alloc\x8c\x04addrK\x10\x8c\x04sizeK\x20u");
    p.extend(b"eeu\x8c\x08segmentsh\x03s.");
    let e = read_snapshot(&p[..], "odd.pickle").unwrap_err().to_string();
    assert!(e.contains("segments") && e.contains("already read"), "{e}");
}

/// `{segments: [], external_annotations: [{stage: S, name: S}, {stage: S, name: S}, ...]}`
/// where `S` is one `len`-byte string written once and referenced by every later field
/// through the memo.
fn one_string_many_references(len: usize, count: usize) -> Vec<u8> {
    let mut p = b"\x80\x02}(\x8c\x08segments]\x8c\x14external_annotations](".to_vec();
    p.extend(b"}(\x8c\x04nameX");
    p.extend((len as u32).to_le_bytes());
    p.extend(std::iter::repeat_n(b'f', len));
    p.extend(b"q\x01\x8c\x05stageh\x01u");
    for _ in 1..count {
        p.extend(b"}(\x8c\x04nameh\x01\x8c\x05stageh\x01u");
    }
    p.extend(b"eu.");
    p
}

#[test]
fn an_annotation_string_referenced_through_the_memo_is_allocated_once() {
    // 64 KiB referenced 40 000 times (20 000 names, 20 000 stages): 2.6 GB if copied per
    // reference, which the decoded-size bound refused before the strings were shared.
    let (len, count) = (64 << 10, 20_000);
    let bytes = one_string_many_references(len, count);
    let snapshot = read_snapshot_within(&bytes[..], "names.pickle", 0).unwrap();
    assert_eq!(snapshot.annotations.len(), count);
    let first = std::sync::Arc::clone(&snapshot.annotations[0].name);
    assert_eq!(first.len(), len);
    for (i, a) in snapshot.annotations.iter().enumerate() {
        assert!(std::sync::Arc::ptr_eq(&a.name, &first), "name {i}");
        assert!(std::sync::Arc::ptr_eq(&a.stage, &first), "stage {i}");
    }
}

/// `{segments: [], device_traces: [[{action: S}, {action: S}, ...]]}` where `S` is one
/// `len`-byte action name PyTorch does not define, written once and referenced `count`
/// times through the memo: unknown actions are kept by name, one copy each.
fn one_action_many_references(len: usize, count: usize) -> Vec<u8> {
    let mut p = b"\x80\x02}(\x8c\x08segments]\x8c\x0ddevice_traces](](".to_vec();
    p.extend(b"}(\x8c\x06actionX");
    p.extend((len as u32).to_le_bytes());
    p.extend(std::iter::repeat_n(b'f', len));
    p.extend(b"q\x01u");
    for _ in 1..count {
        p.extend(b"}(\x8c\x06actionh\x01u");
    }
    p.extend(b"eeu.");
    p
}

#[test]
fn a_string_referenced_through_the_memo_cannot_blow_up_the_decoded_size() {
    // 64 KiB referenced 20 000 times: 1.3 GB of copies from 284 KB of input.
    let bytes = one_action_many_references(64 << 10, 20_000);
    let e = read_snapshot_within(&bytes[..], "bomb.pickle", 0)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("bomb.pickle: data error: not a memory snapshot: device_traces[0]["),
        "{e}"
    );
    assert!(e.contains("more than 256 times the file's size"), "{e}");
    // A few references stay within the bound and read as usual.
    let fine = one_action_many_references(64 << 10, 10);
    let snapshot = read_snapshot_within(&fine[..], "fine.pickle", 0).unwrap();
    assert_eq!(snapshot.device_traces[0].len(), 10);
}

#[test]
fn a_field_of_the_wrong_type_is_named_with_its_article_and_the_file_without_a_line() {
    // `{'segments': 5, 'device_traces': []}` as Python pickles it with protocol 2.
    let bytes = b"\x80\x02}q\x00(X\x08\x00\x00\x00segmentsq\x01K\x05X\r\x00\x00\x00device_tracesq\x02]q\x03u.";
    let e = read_snapshot(&bytes[..], "bad.pickle")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "bad.pickle: data error: not a memory snapshot: segments: expected a list, found an int"
    );
}

/// `{device_traces: [[e_0, ..., e_{count-1}]], segments: []}` where every entry has its own
/// one-frame stack whose function name is one `len`-byte string, written once and referenced
/// by all later frames through the memo (the shape of the "frame name" memory bomb).
fn one_frame_name_many_references(len: usize, count: usize) -> Vec<u8> {
    let mut p = b"\x80\x02}(\x8c\x0ddevice_traces](](".to_vec();
    for i in 0..count as u32 {
        p.extend(b"}(\x8c\x06action\x8c\x05alloc\x8c\x04addrJ");
        p.extend((i * 512).to_le_bytes());
        p.extend(b"\x8c\x04sizeM\x00\x02\x8c\x06frames](}(\x8c\x04name");
        if i == 0 {
            p.push(b'X');
            p.extend((len as u32).to_le_bytes());
            p.extend(std::iter::repeat_n(b'f', len));
            p.extend(b"q\x01");
        } else {
            p.extend(b"h\x01");
        }
        p.extend(b"\x8c\x08filename\x8c\x04a.py\x8c\x04lineJ");
        p.extend(i.to_le_bytes());
        p.extend(b"ueu");
    }
    p.extend(b"ee\x8c\x08segments]u.");
    p
}

#[test]
fn a_frame_name_referenced_through_the_memo_is_allocated_once() {
    // 4 KiB referenced by 100 000 distinct frames: 400 MB if copied per reference.
    let (len, count) = (4 << 10, 100_000);
    let bytes = one_frame_name_many_references(len, count);
    let snapshot = read_snapshot_within(&bytes[..], "names.pickle", 0).unwrap();
    let trace = &snapshot.device_traces[0];
    assert_eq!(trace.len(), count);
    // Every frame holds the same allocation of the name, and the heap of distinct decoded
    // strings (by allocation) stays within the input's size.
    let first = std::sync::Arc::clone(&snapshot.stacks.get(trace[0].frames.unwrap())[0].name);
    assert_eq!(first.len(), len);
    let mut distinct = std::collections::HashSet::new();
    let mut heap = 0usize;
    for (i, entry) in trace.iter().enumerate() {
        let frame = &snapshot.stacks.get(entry.frames.unwrap())[0];
        assert_eq!(frame.line as usize, i);
        assert!(std::sync::Arc::ptr_eq(&frame.name, &first), "entry {i}");
        for s in [&frame.name, &frame.file] {
            if distinct.insert(std::sync::Arc::as_ptr(s) as *const u8) {
                heap += s.len();
            }
        }
    }
    // The file name is written anew in every frame (not memoised): one small string each.
    assert_eq!(distinct.len(), count + 1);
    assert!(
        heap <= bytes.len(),
        "{heap} bytes of strings from {}",
        bytes.len()
    );
}
