//! `return` inside `async with` in a coroutine (`Instr::AsyncWithExitUnder`): the
//! return value is kept on the frame's stack while each `__aexit__(None, None, None)` is
//! awaited (suspending to the event loop), innermost first, then the enclosing `finally`
//! runs and the value leaves. Run with pyenv 3.8.18 – 3.13.0 and fetched 3.14/3.15; checked
//! here on the model (3.10 – 3.12) and every installed CPython.

#[allow(dead_code)] // this file uses `agrees_with_cpython`
mod probes;

const SCRIPT: &str = include_str!("vm_gen_async_with_return.py");

#[test]
fn a_return_awaits_each_aexit_before_the_value_leaves() {
    probes::agrees_with_cpython("", 15, SCRIPT);
}

/// Still refused, located: a `return` inside a suspending `for` loop inside an `async with`
/// (the loop's iterator sits on the frame's stack above the exit).
#[test]
fn a_return_through_a_suspending_loop_in_async_with_is_refused() {
    let script = "class M:\n    async def __aenter__(self):\n        return self\n    async def __aexit__(self, *e):\n        return False\nasync def f():\n    async with M():\n        for i in range(2):\n            await asyncio.sleep(0)\n            return i\nasyncio.run(f())\n";
    let err = probes::run("3.11", script).expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains("suspending loop inside an `async with`"),
        "{text}"
    );
    assert!(text.contains("t.yaml:11:18"), "located at the item: {text}");
}
