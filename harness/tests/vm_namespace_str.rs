//! `str()`, `print` and f-strings of a `types.SimpleNamespace` print its `repr`
//! (`namespace(a=1, b='x')`): the type has no `tp_str`.

#[allow(dead_code)] // this file uses `agrees_with_cpython` only
mod probes;

#[test]
fn str_and_f_strings_of_a_namespace_are_its_repr() {
    probes::agrees_with_cpython(
        "",
        15,
        "import types
ns = types.SimpleNamespace(a=1, b='x')
assert str(ns) == \"namespace(a=1, b='x')\", str(ns)
assert f'{ns}' == str(ns) == repr(ns)
inner = types.SimpleNamespace(cfg=ns)
assert str(inner) == \"namespace(cfg=namespace(a=1, b='x'))\", str(inner)
ns.me = ns
assert str(ns) == \"namespace(a=1, b='x', me=namespace(...))\", str(ns)
",
    );
}

#[test]
fn print_writes_the_repr() {
    let t = probes::ok("import types\nprint(types.SimpleNamespace(lr=0.5))\n");
    assert_eq!(t.printed.lines, ["namespace(lr=0.5)"]);
}
