#!/usr/bin/env python3
# SPDX-License-Identifier: MPL-2.0
"""compare_profiles.py A.json B.json -- are two profile dumps (tests/make-profile.sh
--dump, i.e. what Firefox itself reads through PlacesUtils and Services.logins)
the same to a user?  Bookmarks: tree, order, titles, URLs, tags, keywords;
history: pages, titles, visits (date, transition); logins: every field, the
password decrypted.  Prints the differences; exit 0 when equal, 1 otherwise."""
import json
import sys

ROOTS = {"root________", "tags________"}


def bookmarks(d):
    out = {}
    for b in d.get("bookmarks", []):
        if b["guid"] in ROOTS:
            continue
        out[b["guid"]] = {
            "type": b.get("type"), "parent": b.get("parentGuid"), "index": b.get("index"),
            "title": b.get("title") or "", "url": b.get("url"),
            "tags": sorted(b.get("tags") or []), "keyword": b.get("keyword"),
            "children": b.get("children") if b.get("type") == "folder" else None,
        }
    return out


def history(d):
    return {p["url"]: {"title": p.get("title") or "",
                       "visits": sorted((v["date"], v["transition"]) for v in p.get("visits", []))}
            for p in d.get("history", [])}


def logins(d):
    keys = ("hostname", "origin", "formSubmitURL", "formActionOrigin", "httpRealm", "username",
            "password", "usernameField", "passwordField", "timeCreated", "timePasswordChanged")
    return {l.get("guid"): {k: l.get(k) for k in keys if k in l} for l in d.get("logins", [])}


def main():
    a, b = (json.load(open(p)) for p in sys.argv[1:3])
    bad = 0
    for name, fn in (("bookmark", bookmarks), ("page", history), ("login", logins)):
        x, y = fn(a), fn(b)
        for k in sorted(set(x) | set(y), key=str):
            if x.get(k) != y.get(k):
                bad += 1
                print("%s %s differs:\n  %s\n  %s" % (name, k, x.get(k), y.get(k)))
    print("%d differences; %d bookmarks, %d pages, %d logins" % (bad, len(bookmarks(a)), len(history(a)),
                                                                   len(logins(a))))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
