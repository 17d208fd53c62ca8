// The XML objects behind E4X (`e4x.rs` rewrites the syntax into calls on these): an element parsed
// from text, its descendants and children by name, its attributes, its text, and its XML.
var __e4x = (function () {
    "use strict";
    var ENTITIES = { lt: "<", gt: ">", amp: "&", quot: "\"", apos: "'" };
    function decode(s) {
        return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, function (m, e) {
            if (e[0] === "#") {
                return String.fromCodePoint(e[1] === "x" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
            }
            if (ENTITIES[e] === undefined) {
                throw new SyntaxError("XML: unknown entity &" + e + ";");
            }
            return ENTITIES[e];
        });
    }
    function escText(s) {
        return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    }
    function escAttr(s) {
        return escText(s).replace(/"/g, "&quot;");
    }

    // A well-formed element's text to a tree: {name, local, ns, attrs: [[name, value]], children}
    // and text nodes {text}. Namespace URIs are resolved for matching by namespace.
    function parse(src) {
        var s = String(src), i = 0;
        var NAME = /[A-Za-z_][\w.\-]*(?::[A-Za-z_][\w.\-]*)?/y;
        function ws() {
            for (;;) {
                var c = s.charCodeAt(i);
                if (c !== 32 && c !== 10 && c !== 9 && c !== 13) { return; }
                i++;
            }
        }
        function fail(why) { throw new SyntaxError("XML: " + why + " at " + i); }
        function skipMisc() {
            for (;;) {
                ws();
                if (s.startsWith("<?", i)) { i = s.indexOf("?>", i) + 2; if (i < 2) { fail("a processing instruction is not closed"); } }
                else if (s.startsWith("<!--", i)) { i = s.indexOf("-->", i) + 3; if (i < 3) { fail("a comment is not closed"); } }
                else { return; }
            }
        }
        function name() {
            NAME.lastIndex = i;
            var m = NAME.exec(s);
            if (!m) { fail("a name is expected"); }
            i += m[0].length;
            return m[0];
        }
        function element(scope) {
            if (s[i] !== "<") { fail("'<' is expected"); }
            i++;
            var n = { name: name(), attrs: [], children: [] };
            for (;;) {
                ws();
                if (s[i] === ">" || s.startsWith("/>", i)) { break; }
                var an = name();
                ws();
                if (s[i] !== "=") { fail("'=' is expected"); }
                i++;
                ws();
                var q = s[i];
                if (q !== "\"" && q !== "'") { fail("a quoted value is expected"); }
                var end = s.indexOf(q, i + 1);
                if (end < 0) { fail("a value is not closed"); }
                n.attrs.push([an, decode(s.slice(i + 1, end))]);
                i = end + 1;
            }
            var own = Object.create(scope);
            n.attrs.forEach(function (a) {
                if (a[0] === "xmlns") { own[""] = a[1]; }
                else if (a[0].startsWith("xmlns:")) { own[a[0].slice(6)] = a[1]; }
            });
            var colon = n.name.indexOf(":");
            n.local = colon < 0 ? n.name : n.name.slice(colon + 1);
            n.ns = own[colon < 0 ? "" : n.name.slice(0, colon)] || "";
            if (s.startsWith("/>", i)) { i += 2; return n; }
            i++;
            for (;;) {
                if (i >= s.length) { fail("<" + n.name + "> is not closed"); }
                if (s.startsWith("</", i)) {
                    i += 2;
                    if (name() !== n.name) { fail("</" + n.name + "> is expected"); }
                    ws();
                    if (s[i] !== ">") { fail("'>' is expected"); }
                    i++;
                    return n;
                }
                if (s.startsWith("<!--", i)) { i = s.indexOf("-->", i) + 3; continue; }
                if (s.startsWith("<?", i)) { i = s.indexOf("?>", i) + 2; continue; }
                if (s.startsWith("<![CDATA[", i)) {
                    var c = s.indexOf("]]>", i);
                    if (c < 0) { fail("a CDATA section is not closed"); }
                    n.children.push({ text: s.slice(i + 9, c) });
                    i = c + 3;
                    continue;
                }
                if (s[i] === "<") { n.children.push(element(own)); continue; }
                var lt = s.indexOf("<", i);
                if (lt < 0) { lt = s.length; }
                var raw = s.slice(i, lt);
                var t = raw.indexOf("&") < 0 ? raw : decode(raw);
                // E4X's ignoreWhitespace: white space alone between elements is dropped.
                if (!/^\s*$/.test(t)) { n.children.push({ text: t }); }
                i = lt;
            }
        }
        skipMisc();
        var root = element({ xml: "http://www.w3.org/XML/1998/namespace" });
        skipMisc();
        if (i < s.length) { fail("content after the root element"); }
        return root;
    }

    function ser(n) {
        if (n.text !== undefined) { return escText(n.text); }
        var out = "<" + n.name;
        n.attrs.forEach(function (a) { out += " " + a[0] + "=\"" + escAttr(a[1]) + "\""; });
        if (n.children.length === 0) { return out + "/>"; }
        return out + ">" + n.children.map(ser).join("") + "</" + n.name + ">";
    }
    function textOf(n) {
        return n.text !== undefined ? n.text : n.children.map(textOf).join("");
    }
    function simple(n) {
        return n.text !== undefined || n.children.every(function (c) { return c.text !== undefined; });
    }
    // `name` "*" matches any element; `anyNs` matches the local name in any namespace, else the
    // element must be in no namespace (E4X without `*::`).
    function matches(n, name, anyNs) {
        return n.text === undefined && (name === "*" || (n.local === name && (anyNs || n.ns === "")));
    }

    function XML(node) { this.node = node; }
    XML.prototype.__isXml = true;
    XML.prototype.toXMLString = function () { return ser(this.node); };
    XML.prototype.toString = function () { return simple(this.node) ? textOf(this.node) : ser(this.node); };
    XML.prototype.text = function () { return textOf(this.node); };
    XML.prototype.localName = function () { return this.node.local; };
    XML.prototype.name = function () { return this.node.name; };
    XML.prototype.length = function () { return 1; };
    XML.prototype.__nodes = function () { return [this.node]; };
    XML.prototype.__desc = function (name, anyNs) { return desc([this.node], name, anyNs); };
    XML.prototype.__child = function (name, anyNs) { return child([this.node], name, anyNs); };
    XML.prototype.__attr = function (name) { return attr([this.node], name); };

    function desc(nodes, name, anyNs) {
        var out = [];
        function walk(n) {
            n.children.forEach(function (c) {
                if (c.text !== undefined) { return; }
                if (matches(c, name, anyNs)) { out.push(c); }
                walk(c);
            });
        }
        nodes.forEach(function (n) { if (n.text === undefined) { walk(n); } });
        return list(out);
    }
    function child(nodes, name, anyNs) {
        var out = [];
        nodes.forEach(function (n) {
            (n.children || []).forEach(function (c) { if (matches(c, name, anyNs)) { out.push(c); } });
        });
        return list(out);
    }
    function attr(nodes, name) {
        var values = [];
        nodes.forEach(function (n) {
            (n.attrs || []).forEach(function (a) { if (a[0] === name) { values.push(a[1]); } });
        });
        var l = { __isXml: true };
        l.toString = function () { return values.join(""); };
        l.toXMLString = l.toString;
        l.length = function () { return values.length; };
        return l;
    }
    // An XML list: items by index, length(), and E4X's toString (one simple element: its text).
    function list(nodes) {
        var items = nodes.map(function (n) { return new XML(n); });
        var l = { __isXml: true };
        items.forEach(function (x, k) { l[k] = x; });
        l.length = function () { return items.length; };
        l.toXMLString = function () { return items.map(function (x) { return x.toXMLString(); }).join("\n"); };
        l.toString = function () { return items.length === 1 ? items[0].toString() : l.toXMLString(); };
        l.text = function () { return items.map(function (x) { return x.text(); }).join(""); };
        l.__nodes = function () { return nodes; };
        l.__desc = function (name, anyNs) { return desc(nodes, name, anyNs); };
        l.__child = function (name, anyNs) { return child(nodes, name, anyNs); };
        l.__attr = function (name) { return attr(nodes, name); };
        return l;
    }

    return {
        xml: function (text) { return new XML(parse(text)); },
        parse: function (text) { return text === null ? null : new XML(parse(text)); },
        t: function (v) { return escText(v); },
        a: function (v) { return escAttr(v); },
        isXml: function (v) { return v !== null && typeof v === "object" && v.__isXml === true; }
    };
})();
