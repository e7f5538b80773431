// Canonical JSON against RFC 8785's own examples (§3.2.2, §3.2.3, Appendix B) and hostile input.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CanonicalJsonError, canonicalJson } from '../../src/protocol/canonical.ts';
import { parseJsonWire } from '../../src/protocol/validate.ts';

function fromIeeeHex(hex: string): number {
  return Buffer.from(hex, 'hex').readDoubleBE(0);
}

describe('canonicalJson: RFC 8785 examples', () => {
  it('§3.2.2: the sample object (numbers, string escapes, literals)', () => {
    const input = parseJsonWire(
      '{\n  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],\n' +
        '  "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",\n' +
        '  "literals": [null, true, false]\n}',
    );
    const expected = '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' + '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}';
    assert.equal(canonicalJson(input), expected);
  });

  it('§3.2.2: the UTF-8 bytes of the sample output', () => {
    const input = {
      // biome-ignore lint/correctness/noPrecisionLoss: RFC 8785's sample input, written as the RFC writes it (the double is 333333333.3333333)
      numbers: [333333333.33333329, 1e30, 4.5, 2e-3, 0.000000000000000000000000001],
      string: '\u20ac$\u000F\u000aA\'\u0042\u0022\u005c\\"/',
      literals: [null, true, false],
    };
    const hex =
      '7b 22 6c 69 74 65 72 61 6c 73 22 3a 5b 6e 75 6c 6c 2c 74 72 75 65 2c 66 61 6c 73 65 5d 2c 22 6e 75 6d 62 ' +
      '65 72 73 22 3a 5b 33 33 33 33 33 33 33 33 33 2e 33 33 33 33 33 33 33 2c 31 65 2b 33 30 2c 34 2e 35 2c 30 2e 30 ' +
      '30 32 2c 31 65 2d 32 37 5d 2c 22 73 74 72 69 6e 67 22 3a 22 e2 82 ac 24 5c 75 30 30 30 66 5c 6e 41 27 42 5c 22 ' +
      '5c 5c 5c 5c 5c 22 2f 22 7d';
    assert.deepEqual(Buffer.from(canonicalJson(input), 'utf8'), Buffer.from(hex.replaceAll(' ', ''), 'hex'));
  });

  it('§3.2.3: property sorting by UTF-16 code units', () => {
    const input = parseJsonWire(
      '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One",' +
        '"\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}',
    );
    const expected =
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
      '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}';
    assert.equal(canonicalJson(input), expected);
  });

  const appendixB: [string, string][] = [
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ];
  for (const [hex, expected] of appendixB) {
    it(`Appendix B: ${hex} → ${expected}`, () => {
      assert.equal(canonicalJson(fromIeeeHex(hex)), expected);
      assert.equal(canonicalJson([fromIeeeHex(hex)]), `[${expected}]`);
    });
  }

  for (const hex of ['7fffffffffffffff', '7ff0000000000000', 'fff0000000000000']) {
    it(`Appendix B: ${hex} (NaN / ±Infinity) is refused`, () => {
      assert.throws(() => canonicalJson({ n: fromIeeeHex(hex) }), CanonicalJsonError);
    });
  }
});

describe('canonicalJson: JavaScript rules of protocol §1', () => {
  it('leaves out undefined members and writes undefined array entries as null', () => {
    assert.equal(canonicalJson({ b: 1, a: undefined, c: [undefined, 2] }), '{"b":1,"c":[null,2]}');
  });

  it('keeps array order and sorts nested objects', () => {
    assert.equal(canonicalJson({ z: [{ b: 2, a: 1 }, 3], a: { d: null, c: true } }), '{"a":{"c":true,"d":null},"z":[{"a":1,"b":2},3]}');
  });

  it('refuses a 100,000-deep array without crashing', () => {
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    assert.throws(() => canonicalJson(deep), CanonicalJsonError);
  });

  it('refuses 100,000-deep parsed JSON without crashing', () => {
    const parsed = parseJsonWire(`${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`);
    assert.throws(() => canonicalJson(parsed), CanonicalJsonError);
  });

  it('refuses a cycle', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    assert.throws(() => canonicalJson(cyclic), CanonicalJsonError);
  });
});
