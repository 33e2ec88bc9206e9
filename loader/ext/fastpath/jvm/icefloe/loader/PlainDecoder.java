/*
 * The loader's JVM path for plain records: a Spark UDF that decodes a Kafka record value into a
 * row of the table, or returns null when it cannot prove the record plain.
 *
 * "Plain" means the strict Python parser (loader/parse.py, the reference for what is valid)
 * would accept the record and produce exactly this row. The decoder never rejects: every
 * record it returns null for goes to the Python parser, which accepts it or names its error.
 * It returns null for anything in doubt: invalid UTF-8, control bytes, a root that is not an
 * object, duplicate keys, nesting deeper than allowed, a missing required value, a value of
 * the wrong JSON type or out of range, a key that matches a column only by a non-ASCII case
 * folding, a double near the subnormal range, a base64 text that is not canonical, and any
 * error of the JSON parser.
 *
 * The table schema arrives as a JSON spec written by loader/plain.py (types, names, the
 * names' case folding as Python computes it, required flags, limits); see Readers.compile.
 */
package icefloe.loader;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import java.io.IOException;
import java.io.Serializable;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF1;

public final class PlainDecoder implements UDF1<byte[], Row>, Serializable {
  private static final long serialVersionUID = 1L;

  private final String spec;
  private transient Readers.Compiled compiled;
  private transient JsonFactory factory;

  /**
   * @param spec the schema and options as JSON (see loader/plain.py)
   * @throws IllegalArgumentException the spec is not one this decoder understands
   */
  public PlainDecoder(String spec) {
    this.spec = spec;
    compiled(); // fail on the driver, not in a task
  }

  private Readers.Compiled compiled() {
    if (compiled == null) {
      compiled = Readers.compile(spec);
      factory =
          JsonFactory.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();
    }
    return compiled;
  }

  /** The row for {@code value}, or null when the strict Python parser must decide. */
  @Override
  public Row call(byte[] value) {
    if (value == null) {
      return null;
    }
    Readers.Compiled c = compiled();
    if (value.length > c.maxBytes || !plainBytes(value)) {
      return null;
    }
    try (JsonParser p = factory.createParser(value)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return null;
      }
      Object row = c.root.read(p, JsonToken.START_OBJECT, 1);
      if (p.nextToken() != null) {
        return null; // a second value after the object
      }
      return (Row) row;
    } catch (IOException | RuntimeException e) {
      // Readers.Decline, a JSON syntax error, a limit of the JSON parser: Python decides.
      return null;
    }
  }

  /**
   * Whether the bytes are strict UTF-8 with no control byte outside JSON whitespace, starting
   * (after JSON whitespace) with '{'. Strict means what Python's UTF-8 decoder accepts: no
   * overlong forms, no encoded surrogates, nothing above U+10FFFF. This also pins the JSON
   * parser to UTF-8 (it would otherwise guess UTF-16 or UTF-32 from zero bytes or a BOM).
   */
  static boolean plainBytes(byte[] v) {
    int n = v.length;
    int i = 0;
    while (i < n && isJsonSpace(v[i])) {
      i++;
    }
    if (i == n || v[i] != '{') {
      return false;
    }
    while (i < n) {
      // Bytes are signed: one comparison finds both control bytes and non-ASCII ones.
      byte b = v[i];
      if (b >= 0x20) {
        i++;
      } else if (b >= 0) {
        if (!isJsonSpace(b)) {
          return false;
        }
        i++;
      } else {
        i = utf8Sequence(v, i);
        if (i < 0) {
          return false;
        }
      }
    }
    return true;
  }

  /** The index after the multi-byte sequence starting at {@code i}, or -1 if it is invalid. */
  private static int utf8Sequence(byte[] v, int i) {
    int b = v[i] & 0xff;
    int need;
    int lo = 0x80;
    int hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
    } else if (b == 0xe0) {
      need = 2;
      lo = 0xa0;
    } else if (b == 0xed) {
      need = 2;
      hi = 0x9f; // U+D800..U+DFFF are not characters
    } else if (b >= 0xe1 && b <= 0xef) {
      need = 2;
    } else if (b == 0xf0) {
      need = 3;
      lo = 0x90;
    } else if (b == 0xf4) {
      need = 3;
      hi = 0x8f; // nothing above U+10FFFF
    } else if (b >= 0xf1 && b <= 0xf3) {
      need = 3;
    } else {
      return -1; // a continuation byte, an overlong lead (C0, C1) or F5..FF
    }
    if (i + need >= v.length) {
      return -1;
    }
    int second = v[i + 1] & 0xff;
    if (second < lo || second > hi) {
      return -1;
    }
    for (int k = 2; k <= need; k++) {
      if ((v[i + k] & 0xc0) != 0x80) {
        return -1;
      }
    }
    return i + need + 1;
  }

  private static boolean isJsonSpace(byte b) {
    return b == ' ' || b == '\t' || b == '\n' || b == '\r';
  }
}
