import { canonicalDigest, sha256Hex } from '../core/hashing.js';
import { foldKey } from '../core/text.js';
import { envelopeScope } from './envelope.js';
import { scopeDigest, type ScopeTuple } from './request-scope.js';

// CONTRACT.md §13.3.

const SUBJECT_CODE_POINTS = 96;

/** native_content_hash: hash of `scope_digest|fold_key(fact)`; equal for facts that fold alike in one scope. */
export function nativeContentHash(scope: ScopeTuple, fact: string): string {
  return sha256Hex(`${scopeDigest(scope)}|${foldKey(fact)}`);
}

/** The first `subject:` value of the tags (fold_key, non-empty), or null. */
export function tagSubject(tags: readonly string[]): string | null {
  for (const tag of tags) {
    const folded = foldKey(tag);
    if (folded.startsWith('subject:')) {
      const text = foldKey(folded.slice('subject:'.length));
      if (text !== '') return text;
    }
  }
  return null;
}

/** Subject S: the subject, else the first `subject:` tag, else the first 96 code points of fold_key(fact). */
export function subjectOf(subject: string | null, tags: readonly string[], fact: string): string {
  if (subject !== null) return foldKey(subject);
  return tagSubject(tags) ?? [...foldKey(fact)].slice(0, SUBJECT_CODE_POINTS).join('');
}

/** contradiction_key: hash of `{memory_type, scope, subject: S}`. */
export function contradictionKey(memoryType: string, scope: ScopeTuple, subject: string): string {
  return canonicalDigest({ memory_type: memoryType, scope: envelopeScope(scope), subject });
}
