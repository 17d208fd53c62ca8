// How a script runs in the thread's one context (sloppy global code, loaded once). The script's
// source goes through direct eval inside a function: its `var`s and functions are that call's, so
// nothing of one message's run is there for the next (`__sluice_clean` removes the globals a script
// made without `var`).
// The parameters' names are Sluice's own: a script's `var name` or `var includes` cannot change them.
var __sluice_run = function (__sluice_src) {
    return eval(__sluice_src);
};
// A keyed script: its source, then its includes, in one scope; then its function with `mc`.
// [false] when the source defines no such function.
var __sluice_call = function (__sluice_src, __sluice_includes, __sluice_name) {
    eval(__sluice_src);
    for (var __sluice_k = 0; __sluice_k < __sluice_includes.length; __sluice_k++) {
        eval(__sluice_includes[__sluice_k]);
    }
    var __sluice_f = eval("typeof " + __sluice_name + " === 'function' ? " + __sluice_name + " : undefined");
    return __sluice_f === undefined ? [false] : [true, __sluice_f(mc)];
};
var __sluice_baseline = null;
var __sluice_clean = function () {
    var names = Object.getOwnPropertyNames(globalThis);
    if (__sluice_baseline === null) {
        __sluice_baseline = new Set(names);
        return;
    }
    for (var k = 0; k < names.length; k++) {
        if (!__sluice_baseline.has(names[k])) {
            delete globalThis[names[k]];
        }
    }
};
