#!/usr/bin/env python3
# picl_record_v2.py -- makes picl_record_v2.json, the record v2 vectors of
# records.md section 3, without any PiCL code: HKDF and HMAC from Python's
# hmac/hashlib, AES-256-CBC with PKCS#7 padding from `openssl enc`.
# Run from anywhere: python3 tests/vectors/picl_record_v2.py > tests/vectors/picl_record_v2.json
import base64
import hashlib
import hmac
import json
import subprocess

KW = "identity.mozilla.com/picl/v1/"


def hkdf_sha256(ikm, info, length):
    """RFC 5869 with no salt (a zero-filled salt of the hash length)."""
    prk = hmac.new(b"\0" * 32, ikm, hashlib.sha256).digest()
    out, t, i = b"", b"", 1
    while len(out) < length:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out += t
        i += 1
    return out[:length]


def aes_cbc(key, iv, clear):
    """openssl enc: AES-256-CBC, PKCS#7 padding, raw key and IV in hex."""
    return subprocess.run(["openssl", "enc", "-aes-256-cbc", "-K", key.hex(), "-iv", iv.hex()],
                          input=clear, stdout=subprocess.PIPE, check=True).stdout


def vector(name, kx_hex, cls, collection, generation, bso_id, iv_hex, cleartext):
    kx = bytes.fromhex(kx_hex)
    info = "%scollection:%s:%d" % (KW, collection, generation)
    okm = hkdf_sha256(kx, info.encode(), 64)
    enc, mac_key = okm[:32], okm[32:]
    iv = bytes.fromhex(iv_hex)
    kid = "%s:%d" % (cls, generation)
    ct_b64 = base64.b64encode(aes_cbc(enc, iv, cleartext.encode())).decode()
    iv_b64 = base64.b64encode(iv).decode()
    mac_input = "\n".join(["picl-record-v2", collection, bso_id, kid, iv_b64, ct_b64])
    mac = hmac.new(mac_key, mac_input.encode(), hashlib.sha256).hexdigest()
    payload = json.dumps({"ciphertext": ct_b64, "IV": iv_b64, "hmac": mac, "kid": kid}, separators=(",", ":"))
    return {
        "name": name,
        "kX_hex": kx_hex, "class": cls, "collection": collection, "generation": generation,
        "hkdf_info": info, "enc_key_hex": enc.hex(), "hmac_key_hex": mac_key.hex(),
        "bso_id": bso_id, "kid": kid, "iv_hex": iv_hex, "cleartext": cleartext,
        "ciphertext_b64": ct_b64, "iv_b64": iv_b64, "mac_input": mac_input, "hmac_hex": mac,
        "payload": payload,
    }


def main():
    vectors = [
        vector("class B password", "40414243444546474849404b4c4d4e4f505152535455565758595a5b5c5d5e5f", "B",
               "passwords", 1, "{pw-1}", "000102030405060708090a0b0c0d0e0f",
               '{"id":"{pw-1}","hostname":"https://site.example","username":"u","password":"p1"}'),
        vector("class A bookmark, generation 3", "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
               "A", "bookmarks", 3, "bm1_________", "f0e0d0c0b0a090807060504030201000",
               '{"id":"bm1_________","type":"bookmark","parentid":"menu","title":"One",'
               '"bmkUri":"https://one.example/"}'),
        vector("tombstone of 32 bytes (a whole padding block)",
               "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
               "A", "history", 1, "abcdefgh", "11111111111111111111111111111111",
               '{"id":"abcdefgh","deleted":true}'),
    ]
    print(json.dumps({
        "description": "PiCL record v2 (records.md section 3): keys by HKDF-SHA256, AES-256-CBC with PKCS#7, "
                       "HMAC-SHA256 over macInput; made by picl_record_v2.py with Python hmac/hashlib and openssl enc",
        "vectors": vectors}, indent=2))


if __name__ == "__main__":
    main()
