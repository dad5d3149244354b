//! The span model by construction: packing, ids, text kept, moved and left in the file.

use super::*;

#[test]
fn a_span_is_48_bytes_and_keeps_ids_and_text_apart() {
    assert_eq!(std::mem::size_of::<Span>(), 48);
    let mut st = Stream::default();
    let a = st.with_ids(Span::new(0, 0, 1, 2), Some(0), None, Some(u64::MAX));
    st.push(a, r#"{"a":1}"#, r#"{"zone":"eu"}"#);
    st.push(Span::new(0, 0, 3, 4).with_ids(None, Some(7), None), "", "");
    st.push(Span::new(0, 0, 5, 6), r#"{"b":2}"#, "");
    let [a, b, c] = [st.spans[0], st.spans[1], st.spans[2]];
    assert_eq!((st.id(&a), st.parent(&a), st.thread(&a)), (Some(0), None, Some(u64::MAX)));
    assert_eq!((st.id(&b), st.parent(&b), st.thread(&b)), (None, Some(7), None));
    assert_eq!((st.id(&c), st.parent(&c), st.thread(&c)), (None, None, None));
    // Ids at the edge of what a span holds, and past it, in any place.
    let edge = (1u64 << ID_BITS) - 1;
    for ids in [
        [Some(edge), Some(edge), Some(edge)],
        [Some(edge + 1), None, Some(1)],
        [None, Some(u64::MAX), Some(edge)],
        [Some(3), Some(4), Some(1 << 50)],
    ] {
        let s = st.with_ids(Span::new(0, 0, 0, 0), ids[0], ids[1], ids[2]);
        assert_eq!([st.id(&s), st.parent(&s), st.thread(&s)], ids);
    }
    assert_eq!(st.wide.len(), 4, "{:?}", st.wide);
    assert_eq!((st.fields(&a), st.extra(&a)), (r#"{"a":1}"#, Some(r#"{"zone":"eu"}"#)));
    assert_eq!((st.fields(&b), st.extra(&b)), ("", None));
    assert_eq!((st.fields(&c), st.extra(&c)), (r#"{"b":2}"#, None));
    // A text past what a line can hold is dropped, never spilling into the known bits.
    let long = "x".repeat(MAX_TEXT + 1);
    st.push(Span::new(0, 0, 7, 8).with_ids(Some(1), Some(2), Some(3)), "", &long);
    let d = st.spans[3];
    assert_eq!((st.id(&d), st.parent(&d), st.thread(&d), st.extra(&d)), (Some(1), Some(2), Some(3), None));
}

/// Fields left in the file are found at their bytes whatever the line
/// around them: blanks, carriage returns, escapes, non-object fields,
/// a repeated key, extra keys, over-long and malformed lines, and
/// lines cut across the reader's buffer.
#[test]
fn placed_fields_are_where_the_line_has_them() {
    let long = format!("{{\"name\":\"a\",\"ts_us\":1,\"dur_us\":1,\"fields\":{{\"x\":\"{}\"}}}}", "y".repeat(MAX_LINE));
    let lines = [
        r#"{"name":"a","target":"t","ts_us":1,"dur_us":2,"pid":7,"process":"p","id":1,"fields":{"k":"v"}}"#,
        "",
        "   {\"name\":\"b\",\"ts_us\":3,\"dur_us\":4,\"fields\" :  {\"k\" : \"\\u00e9\\\"\" , \"n\":[1,{\"m\":2}]}  \
            }\r",
        r#"{"name":"c","ts_us":5,"dur_us":6,"fields":42}"#,
        r#"{"name":"c","ts_us":5,"dur_us":6,"fields":"text"}"#,
        r#"{"name":"d","fields":{"first":1},"ts_us":7,"dur_us":8,"fields":{"second":2}}"#,
        r#"{"name":"e","zone":"eu","ts_us":9,"dur_us":1,"fields":{"k":1}}"#,
        r#"{"name":"é","ts_us":9,"dur_us":1,"fields":{"ü":"ß"},"host":"h"}"#,
        r#"{"name": truncated"#,
        &long,
        r#"{"name":"f","ts_us":10,"dur_us":1}"#,
        r#"{"name":"g","ts_us":11,"dur_us":1,"fields":{}}"#,
        concat!(
            r#"{"name":"w","ts_us":12,"dur_us":1,"id":18446744073709551615,"parent":4398046511104,"#,
            r#""thread":1,"fields":{"k":1}}"#
        ),
    ];
    let data = lines.join("\n");
    for buffer in [1, 2, 7, 64, 4096, 1 << 22] {
        assert!(placed_fields_agree(data.as_bytes(), buffer), "buffer {buffer}");
        assert!(placed_fields_agree((data.clone() + "\n").as_bytes(), buffer), "buffer {buffer}, a last newline");
    }
}

/// Text kept for some names, and a stream's text joined after
/// another's, still give each span its own fields and extra keys.
#[test]
fn kept_and_shifted_text_stays_each_spans_own() {
    let mut st = Stream { names: vec!["keep".into(), "drop".into()], ..Stream::default() };
    let rows = [
        (0, r#"{"a":1}"#, r#"{"x":"1"}"#),
        (1, r#"{"b":2}"#, r#"{"y":2}"#),
        (0, "", r#"{"z":[3]}"#),
        (0, r#"{"c":3}"#, ""),
        (1, "", ""),
    ];
    for (i, (name, fields, extra)) in rows.iter().enumerate() {
        st.push(Span::new(*name, 0, i as i64, 1).with_ids(Some(i as u64), None, None), fields, extra);
    }
    let mut shifted = st.clone();
    shifted.text.insert_str(0, "0123456789");
    for s in &mut shifted.spans {
        s.shift_text(10);
    }
    st.keep_text(|n| n == "keep");
    for (i, (name, fields, extra)) in rows.iter().enumerate() {
        let want = |kept: bool| if kept { (*fields, (!extra.is_empty()).then_some(*extra)) } else { ("", None) };
        assert_eq!((st.fields(&st.spans[i]), st.extra(&st.spans[i])), want(*name == 0), "kept, span {i}");
        assert_eq!(
            (shifted.fields(&shifted.spans[i]), shifted.extra(&shifted.spans[i])),
            want(true),
            "shifted, span {i}"
        );
        assert_eq!(st.id(&st.spans[i]), Some(i as u64));
    }
    assert_eq!(st.text, r#"{"a":1}0000009{"x":"1"}0000009{"z":[3]}{"c":3}"#);
}
