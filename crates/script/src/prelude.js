// Synapse's `mc` object for the script mediator, over a snapshot of the message (`input`, JSON).
// What a script changes is kept in `ops`, in order, and applied to the message after the run.
(function (input) {
    "use strict";
    var st = JSON.parse(input);
    var ops = [];
    // The payload as a JavaScript value (getPayloadJSON), parsed once.
    var parsed;
    var scopes = { "default": st.props, "operation": st.props, "axis2": st.axis2, "transport": st.transport };
    function scope(s) {
        return s === undefined || s === null ? "default" : String(s);
    }
    function text(v) {
        return typeof v === "object" && v !== null ? JSON.stringify(v) : String(v);
    }
    var mc = {
        getPayloadXML: function () { return st.xml; },
        setPayloadXML: function (x) {
            if (x === undefined || x === null) {
                throw new TypeError("setPayloadXML: no XML given");
            }
            st.xml = String(x);
            st.json = null;
            parsed = undefined;
            ops.push(["xml", st.xml]);
        },
        getPayloadJSON: function () {
            if (parsed === undefined) {
                try {
                    parsed = st.json === null ? {} : JSON.parse(st.json);
                } catch (e) {
                    throw new SyntaxError("Invalid JSON payload");
                }
            }
            return parsed;
        },
        // A string is JSON text as it is (as Synapse's Rhino engine takes it); anything else is
        // written as JSON.
        setPayloadJSON: function (v) {
            var json = typeof v === "string" ? v : JSON.stringify(v);
            if (json === undefined) {
                throw new TypeError("setPayloadJSON: not a JSON value");
            }
            st.json = json;
            st.xml = null;
            parsed = typeof v === "string" ? undefined : v;
            ops.push(["json", json]);
        },
        getPayloadText: function () { return st.json !== null ? st.json : st.envelope; },
        getEnvelopeXML: function () { return st.envelope; },
        getMessageID: function () { return st.id; },
        getProperty: function (k) {
            var v = st.props[k];
            return v === undefined ? null : v;
        },
        setProperty: function (k, v, s) {
            var sc = scope(s);
            var map = scopes[sc];
            if (map === undefined) {
                return; // Synapse sets nothing in other scopes
            }
            map[k] = v;
            ops.push(["set", sc, String(k), text(v)]);
        },
        removeProperty: function (k, s) {
            var sc = scope(s);
            var map = scopes[sc];
            if (map === undefined) {
                return;
            }
            delete map[k];
            ops.push(["remove", sc, String(k)]);
        },
        getJsonText: function () {
            var v = st.props["JSON_TEXT"];
            return v === undefined ? "{}" : v;
        },
        setJsonText: function (m, v) { mc.setProperty("JSON_TEXT", v); },
        jsonObject: function () {
            var v = st.props["JSON_OBJECT"];
            return v === undefined ? {} : v;
        },
        setJsonObject: function (m, v) { mc.setProperty("JSON_OBJECT", v); }
    };
    globalThis.mc = mc;
    globalThis.__sluice_ops = function () { return JSON.stringify(ops); };
})
