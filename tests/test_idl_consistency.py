#!/usr/bin/env python3
# SPDX-License-Identifier: MPL-2.0
"""test_idl_consistency.py SRCDIR [RESULTFILE] -- idl/nsIPiCLService.idl against
components/PiCLService.sys.mjs and components/picl.h.

A stock Firefox cannot load an out-of-tree XPIDL interface, so the browser
tests exercise PiCLService, which must have the IDL's exact shape:
  * every IDL attribute is a getter (and a setter unless readonly), every IDL
    method a method with the same number of parameters;
  * nothing public (not starting with "_") in PiCLService is missing from the IDL;
  * the interface is [scriptable, uuid(...)] and its uuid is picl.h's
    PICL_ISERVICE_IID; long operations return Promise;
  * nsIPiCLObserver.onProgress has the five arguments of picl_observer_fn.
Prints one line per failed check and "idl: P passed, F failed"; writes the
last line's counts to RESULTFILE."""
import os
import re
import sys


def strip_comments(text, line_comment):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(line_comment + r".*$", "", text, flags=re.M)


def idl_members(text):
    """{name: (kind, arity, return type)} of the first interface in text."""
    body = strip_comments(text, r"//")
    start = body.index("{", body.index("interface "))
    end = body.index("};", start)
    members = {}
    for decl in body[start + 1:end].split(";"):
        decl = " ".join(decl.split())
        if not decl:
            continue
        m = re.match(r"(readonly )?attribute (\w+) (\w+)$", decl)
        if m:
            members[m.group(3)] = ("readonly" if m.group(1) else "attribute", None, m.group(2))
            continue
        m = re.match(r"([\w<>]+) (\w+)\s*\((.*)\)$", decl)
        if m:
            args = [a for a in m.group(3).split(",") if a.strip()]
            for a in args:
                if not re.match(r"\s*in ", a):
                    raise ValueError("argument without 'in': %r" % decl)
            members[m.group(2)] = ("method", len(args), m.group(1))
            continue
        raise ValueError("cannot parse IDL declaration %r" % decl)
    return members


def js_members(text):
    """{name: set of kinds ('get', 'set', 'method') and arity} of class Service."""
    body = strip_comments(text, r"(?<![:\"'])//")
    start = body.index("class Service {")
    end = body.index("\n}\n", start)
    members = {}
    for line in body[start:end].split("\n"):
        m = re.match(r"  (?:(get|set|async) )?(\w+)\s*\(([^)]*)\)\s*\{$", line)
        if not m:
            continue
        kind, name, params = m.group(1), m.group(2), m.group(3)
        entry = members.setdefault(name, {"kinds": set(), "arity": None})
        if kind in ("get", "set"):
            entry["kinds"].add(kind)
        else:
            entry["kinds"].add("method")
            # Function.length: parameters before the first default or rest
            n = 0
            for p in [p.strip() for p in params.split(",") if p.strip()]:
                if "=" in p or p.startswith("..."):
                    break
                n += 1
            entry["arity"] = n
    return members, ("export const PiCLService = new Service();" in text)


def compare(idl, js):
    """Yields (ok, message) for every IDL member and every public JS member."""
    for name, (kind, arity, rtype) in sorted(idl.items()):
        j = js.get(name)
        if not j:
            yield False, "IDL member %s is not implemented by PiCLService" % name
            continue
        if kind == "method":
            yield j["kinds"] == {"method"}, "%s must be a method" % name
            yield j["arity"] == arity, "%s takes %s arguments in JS, %d in the IDL" % (name, j["arity"], arity)
        else:
            want = {"get"} if kind == "readonly" else {"get", "set"}
            yield j["kinds"] == want, "%s: JS has %s, IDL %s attribute" % (name, sorted(j["kinds"]), kind)
    for name in sorted(js):
        if name.startswith("_") or name == "constructor":
            continue
        yield name in idl, "PiCLService.%s is not in the IDL" % name


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "."
    out = sys.argv[2] if len(sys.argv) > 2 else None
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print("idl FAIL:", what)

    def read(rel):
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            return f.read()

    try:
        idl_text = read("idl/nsIPiCLService.idl")
        obs_text = read("idl/nsIPiCLObserver.idl")
        js_text = read("components/PiCLService.sys.mjs")
        h_text = read("components/picl.h")
        idl = idl_members(idl_text)
        obs = idl_members(obs_text)
        js, exported = js_members(js_text)
    except (OSError, ValueError) as e:
        check(False, "cannot read or parse: %s" % e)
        idl, obs, js, exported, idl_text, h_text, js_text = {}, {}, {}, False, "", "", ""

    check(exported, "PiCLService.sys.mjs exports PiCLService = new Service()")
    required = {"keyserverURL", "signedInEmail", "verified", "createAccount", "verifyEmail", "signIn",
                "signOut", "changePassword", "forgotPassword", "completePasswordReset",
                "destroyAccount", "getCollectionClass", "setCollectionClass", "sync",
                "addObserver", "removeObserver"}
    check(required <= set(idl), "IDL lacks %s" % sorted(required - set(idl)))
    for ok, what in compare(idl, js):
        check(ok, what)

    # the comparison must be able to fail: mutated copies of the module
    mutations = [
        ("signOut() {", "signOut(x) {", "an extra parameter"),
        ("  removeObserver(observer) {", "  extraMember() {\n  }\n  removeObserver2(observer) {",
         "a missing member and an extra one"),
        ("  get verified() {", "  verified() {", "an attribute turned into a method"),
        ("  set keyserverURL(url) {", "  setKeyserverURL(url) {", "a lost setter"),
    ]
    for old_text, new_text, what in mutations:
        if old_text not in js_text:
            check(False, "self-test: %r not found in PiCLService.sys.mjs" % old_text)
            continue
        mutated, _ = js_members(js_text.replace(old_text, new_text, 1))
        check(any(not ok for ok, _ in compare(idl, mutated)), "self-test: %s is detected" % what)

    # the long operations are Promises; the rest are not
    for name in ("createAccount", "verifyEmail", "signIn", "signOut", "changePassword", "forgotPassword",
                 "completePasswordReset", "destroyAccount", "setCollectionClass", "sync"):
        if name in idl:
            check(idl[name][2] == "Promise", "%s must return Promise" % name)
    if "getCollectionClass" in idl:
        check(idl["getCollectionClass"][2] == "AUTF8String", "getCollectionClass returns AUTF8String")
    check(re.search(r"\[scriptable, uuid\([0-9a-f-]{36}\)\]\s*interface nsIPiCLService : nsISupports",
                    idl_text) is not None, "nsIPiCLService is [scriptable, uuid(...)] : nsISupports")
    m = re.search(r"uuid\(([0-9a-f-]{36})\)\]\s*interface nsIPiCLService", idl_text)
    h = re.search(r"nsIPiCLService \{([0-9a-f-]{36})\}", h_text)
    check(m is not None and h is not None and m.group(1) == h.group(1),
          "the IDL uuid equals picl.h's PICL_ISERVICE_IID comment")
    hm = re.search(r"#define PICL_ISERVICE_IID \{0x([0-9a-f]{8}), 0x([0-9a-f]{4}), 0x([0-9a-f]{4}), "
                   r"\{((?:0x[0-9a-f]{2}, ){7}0x[0-9a-f]{2})\}\}", h_text)
    if m and hm:
        parts = hm.group(4).replace("0x", "").split(", ")
        as_uuid = "%s-%s-%s-%s-%s" % (hm.group(1), hm.group(2), hm.group(3), "".join(parts[:2]), "".join(parts[2:]))
        check(as_uuid == m.group(1), "PICL_ISERVICE_IID bytes equal the IDL uuid (%s)" % as_uuid)
    else:
        check(False, "PICL_ISERVICE_IID not found in picl.h")
    check("onProgress" in obs and obs["onProgress"][1] == 5,
          "nsIPiCLObserver.onProgress(phase, collection, done, total, message)")
    check('#include "nsISupports.idl"' in idl_text, "the IDL includes nsISupports.idl")

    line = "%d passed, %d failed" % (passed, failed)
    if out:
        with open(out, "w") as fh:
            fh.write(line + "\n")
    print("idl: " + line)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
