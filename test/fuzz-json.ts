import fc from 'fast-check'

/**
 * JSON as the fuzz test sends it: a tree that can say what JSON.stringify cannot — number text such as `-0` or
 * `1e999`, objects with `__proto__` as an own key or with a key twice, and nesting thousands of levels deep —
 * and the JSON Pointer checks the test makes against what the service answered.
 */

/** JSON text sent exactly as written. */
export class Raw {
  constructor(readonly text: string) {}

  // fast-check prints counterexamples: a 10 MB string or 20,000 brackets would drown the seed in the output.
  [fc.toStringMethod](): string {
    const shown = this.text.length > 120 ? `${this.text.slice(0, 60)}…(${this.text.length} chars)` : this.text
    return `Raw(${JSON.stringify(shown)})`
  }
}

/** An object as a list of members: order kept, duplicates and any key (`__proto__` too) allowed. */
export class Members {
  constructor(readonly members: Array<[string, Node]>) {}
}

export type Node = null | boolean | number | string | Raw | Members | Node[]

/** A JSON value (as JSON.parse gives) as a tree. */
export function toNode(value: unknown): Node {
  if (Array.isArray(value)) return value.map(toNode)
  if (value !== null && typeof value === 'object') {
    return new Members(Object.entries(value).map(([key, member]) => [key, toNode(member)]))
  }
  return value as Node
}

export function serialize(node: Node): string {
  if (node instanceof Raw) return node.text
  if (node instanceof Members) {
    return `{${node.members.map(([key, value]) => `${JSON.stringify(key)}:${serialize(value)}`).join(',')}}`
  }
  if (Array.isArray(node)) return `[${node.map(serialize).join(',')}]`
  // JSON.stringify writes NaN and ±Infinity as null, which is what a client's serializer would send.
  return JSON.stringify(node)
}

/** A place in a tree: member or element positions from the root (positions, not keys: keys may repeat). */
export type Path = number[]

function childrenOf(node: Node): Node[] {
  if (node instanceof Members) return node.members.map(([, value]) => value)
  if (Array.isArray(node)) return node
  return []
}

/** Every path in the tree, the root's ([]) first. */
export function pathsOf(node: Node, prefix: Path = []): Path[] {
  return [prefix, ...childrenOf(node).flatMap((child, index) => pathsOf(child, [...prefix, index]))]
}

export function nodeAt(root: Node, path: Path): Node {
  return path.reduce<Node>((node, index) => childrenOf(node)[index] as Node, root)
}

/** The key of the last step of `path` when it is an object member. */
export function keyAt(root: Node, path: Path): string | undefined {
  const parent = nodeAt(root, path.slice(0, -1))
  return parent instanceof Members ? parent.members[path[path.length - 1] as number]?.[0] : undefined
}

/** A copy of `root` with `change` applied to the node at `path` (the root itself when path is []). */
export function updateAt(root: Node, path: Path, change: (node: Node) => Node): Node {
  if (path.length === 0) return change(root)
  const [index, ...rest] = path as [number, ...number[]]
  if (root instanceof Members) {
    return new Members(root.members.map(([key, value], i) => [key, i === index ? updateAt(value, rest, change) : value]))
  }
  if (Array.isArray(root)) return root.map((value, i) => (i === index ? updateAt(value, rest, change) : value))
  return root
}

/** A copy of `root` without the member or element at `path` (not the root). */
export function removeAt(root: Node, path: Path): Node {
  const index = path[path.length - 1] as number
  return updateAt(root, path.slice(0, -1), (parent) => {
    if (parent instanceof Members) return new Members(parent.members.filter((_, i) => i !== index))
    if (Array.isArray(parent)) return parent.filter((_, i) => i !== index)
    return parent
  })
}

// ---- JSON Pointers (RFC 6901) in the service's answers ----------------------------------------------------------

const POINTER = /^(\/([^~/]|~[01])*)*$/

export function isPointer(text: string): boolean {
  return POINTER.test(text)
}

function unescapeToken(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~')
}

function hasMember(node: unknown, token: string): boolean {
  if (Array.isArray(node)) return /^(0|[1-9]\d*)$/.test(token) && Number(token) < node.length
  return node !== null && typeof node === 'object' && Object.hasOwn(node, token)
}

/**
 * Why `pointer` does not fit `document` (JSON.parse's view of the body sent), or undefined when it does: it must
 * be a valid JSON Pointer that resolves in the document, or name a missing member of an object that does.
 */
export function pointerMisfit(pointer: unknown, document: unknown): string | undefined {
  if (typeof pointer !== 'string') return `pointer ${String(pointer)} is not a string`
  if (!isPointer(pointer)) return `${JSON.stringify(pointer)} is not a JSON Pointer`
  const tokens = pointer.split('/').slice(1).map(unescapeToken)
  let node: unknown = document
  for (const [index, token] of tokens.entries()) {
    if (hasMember(node, token)) {
      node = (node as Record<string, unknown>)[token]
      continue
    }
    const isLast = index === tokens.length - 1
    const isObject = node !== null && typeof node === 'object' && !Array.isArray(node)
    return isLast && isObject ? undefined : `${JSON.stringify(pointer)} does not resolve at ${JSON.stringify(token)}`
  }
  return undefined
}
