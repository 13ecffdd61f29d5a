// Validators of the service's request schemas, generated into the bundle by console/build.ts (see validate.ts).
declare module 'schema:*' {
  const schema: import('./validate').Schema
  export default schema
}
