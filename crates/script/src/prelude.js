// Synapse's `mc` object for the script mediator, over a snapshot of the message (`input`, JSON).
// What a script changes is kept in `ops`, in order, and applied to the message after the run.
// Loaded once a thread: `__sluice_setup` makes a fresh `mc` for each run.
globalThis.__sluice_setup = (function (input) {
    "use strict";
    var st = JSON.parse(input);
    var ops = [];
    // The payload as a JavaScript value (getPayloadJSON), parsed once.
    var parsed;
    var scopes = { "default": st.props, "operation": st.props, "axis2": st.axis2, "transport": st.transport };
    function scope(s) {
        return s === undefined || s === null ? "default" : String(s);
    }
    // E4X (Rhino's XML objects) when the script uses it: payloads are XML objects, not strings.
    var e4x = st.e4x ? __e4x : null;
    function xmlText(v) {
        return e4x !== null && e4x.isXml(v) ? v.toXMLString() : String(v);
    }
    function epr(address) {
        return address === null || address === undefined ? null
            : { getAddress: function () { return address; }, toString: function () { return address; } };
    }
    function text(v) {
        if (e4x !== null && e4x.isXml(v)) {
            return v.toXMLString();
        }
        return typeof v === "object" && v !== null ? JSON.stringify(v) : String(v);
    }
    var mc = {
        getPayloadXML: function () { return e4x !== null ? e4x.parse(st.xml) : st.xml; },
        setPayloadXML: function (x) {
            if (x === undefined || x === null) {
                throw new TypeError("setPayloadXML: no XML given");
            }
            st.xml = xmlText(x);
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
        getEnvelopeXML: function () { return e4x !== null ? e4x.parse(st.envelope) : st.envelope; },
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
        setJsonObject: function (m, v) { mc.setProperty("JSON_OBJECT", v); },
        // Nashorn's XPath over a payload: selectNodes(xml) gives a list whose items' getText() is
        // the node's text (Axiom's names, as MI's Nashorn scripts call them).
        getXpathResult: function (expr) {
            var path = String(expr);
            return {
                selectNodes: function (xml) {
                    var texts = __sluice_xpath(String(xml), path);
                    var nodes = texts.map(function (t) {
                        return { getText: function () { return t; }, toString: function () { return t; } };
                    });
                    return {
                        get: function (i) { return nodes[i]; },
                        size: function () { return nodes.length; },
                        isEmpty: function () { return nodes.length === 0; },
                        length: nodes.length
                    };
                }
            };
        },
        // WS-Addressing: an address as Axiom's EndpointReference (getAddress), or null.
        getTo: function () { return epr(st.to); },
        // Sluice keeps no ReplyTo: null, the client's connection (as for a request without one).
        getReplyTo: function () { return null; },
        setTo: function (to) {
            var address = to === null || to === undefined ? null
                : typeof to.getAddress === "function" ? to.getAddress() : String(to);
            st.to = address;
            ops.push(address === null ? ["to"] : ["to", String(address)]);
        },
        // Axiom's envelope, for scripts that only have it built before going on.
        getEnvelope: function () {
            return {
                build: function () {},
                buildWithAttachments: function () {},
                toString: function () { return st.envelope; }
            };
        }
    };
    globalThis.mc = mc;
    globalThis.__sluice_ops = function () { return JSON.stringify(ops); };
});
