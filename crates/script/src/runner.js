// How a script runs in the thread's one context (sloppy global code, loaded once). The script's
// source goes through direct eval inside a function: its `var`s and functions are that call's, so
// nothing of one message's run is there for the next (`__sluice_clean` removes the globals a script
// made without `var`).
var __sluice_run = function (src) {
    return eval(src);
};
// A keyed script: its source, then its includes, in one scope; then its function with `mc`.
// [false] when the source defines no such function.
var __sluice_call = function (src, includes, name) {
    eval(src);
    for (var __k = 0; __k < includes.length; __k++) {
        eval(includes[__k]);
    }
    var f = eval("typeof " + name + " === 'function' ? " + name + " : undefined");
    return f === undefined ? [false] : [true, f(mc)];
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
