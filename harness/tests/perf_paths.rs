//! Behaviour kept by the speed work on hot paths (issue 13 item 7): the view shape
//! inference without a positions list, the out-of-line name errors, the module hook dicts
//! read in place, and the interner's cache of the model's own names.

use gpumem_harness::python::Interner;
use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;

/// Runs an inline workload on 3.11; the error text if it failed.
fn run(workload: &str) -> Result<(), String> {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let yaml = format!("name: t\ndevice: h100-80gb\npython: \"3.11\"\nworkload: |\n{body}");
    let s = scenario::parse(&yaml, "t.yaml").map_err(|e| e.to_string())?;
    let v = s.variants().remove(0);
    run_variant(&s, &v).map(|_| ()).map_err(|e| e.to_string())
}

#[test]
fn view_infers_one_dimension_and_refuses_two_or_a_bad_size() {
    run(r#"x = torch.zeros(16, device="cuda")
assert x.view(-1, 4).shape == (4, 4)
assert x.view(2, -1, 2).shape == (2, 4, 2)
assert x.view([8, -1]).shape == (8, 2)
assert x.view(16).shape == (16,)
"#)
    .unwrap();
    let two = run("x = torch.zeros(16, device=\"cuda\")\ny = x.view(-1, -1)\n").unwrap_err();
    assert!(two.contains("only one dimension can be inferred"), "{two}");
    let bad = run("x = torch.zeros(16, device=\"cuda\")\ny = x.view(5, -1)\n").unwrap_err();
    assert!(bad.contains("is invalid for input of size 16"), "{bad}");
    let bad = run("x = torch.zeros(16, device=\"cuda\")\ny = x.view(3, 4)\n").unwrap_err();
    assert!(bad.contains("is invalid for input of size 16"), "{bad}");
}

#[test]
fn name_errors_are_reported_with_the_name() {
    let e = run("y = undefined_thing + 1\n").unwrap_err();
    assert!(
        e.contains("NameError: name 'undefined_thing' is not defined"),
        "{e}"
    );
    let e = run("def f():\n    z = w\n    w = 1\nf()\n").unwrap_err();
    assert!(
        e.contains("UnboundLocalError: local variable 'w' referenced before assignment"),
        "{e}"
    );
}

/// Forward pre-hooks and hooks are found in the module's own hook dicts (read in place)
/// and run in order; a module without hooks runs its forward directly.
#[test]
fn module_hooks_are_found_and_run() {
    run(r#"calls = []
m = torch.nn.Linear(4, 4, device="cuda")
x = torch.zeros(2, 4, device="cuda")
y = m(x)
assert calls == []
def pre(mod, inp):
    calls.append("pre")
def post(mod, inp, out):
    calls.append("post")
h1 = m.register_forward_pre_hook(pre)
h2 = m.register_forward_hook(post)
y = m(x)
assert calls == ["pre", "post"], calls
h1.remove()
h2.remove()
y = m(x)
assert calls == ["pre", "post"], calls
"#)
    .unwrap();
}

/// A `'static` name gets the symbol `intern` gives the same text (also from another
/// address), and its text is counted once.
#[test]
fn static_names_share_symbols_and_bytes_with_interned_text() {
    let mut names = Interner::default();
    let a = names.intern("forward");
    let bytes = names.total_bytes();
    assert_eq!(names.intern_static("forward"), a);
    assert_eq!(names.intern_static("forward"), a);
    let owned = String::from("forward");
    assert_eq!(names.intern(&owned), a);
    assert_eq!(names.total_bytes(), bytes);
    let b = names.intern_static("_forward_hooks");
    assert_ne!(a, b);
    assert_eq!(names.intern("_forward_hooks"), b);
    assert_eq!(names.name(b), "_forward_hooks");
    assert!(names.total_bytes() > bytes);
}
