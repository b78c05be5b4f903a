export {
  checkKey,
  type ObjectInfo,
  type PutOptions,
  S3Client,
  type S3ClientConfig,
  type S3Error,
} from './client.ts';
export type { Credentials } from './sigv4.ts';
export type { ListedObject, ListPage } from './xml.ts';
