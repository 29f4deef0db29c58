// express4 is Express 4 installed under an alias, to test the handler in both majors. Its API as used in the
// tests (app.use, app.get, app.post, error middleware) has the same shape as Express 5's types.
declare module 'express4' {
  import express from 'express';
  export default express;
}
