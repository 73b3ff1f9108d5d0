/** A message as GET /v2/messages/{id} renders it (DLQ entries add to it). */
export interface Message {
  messageId: string;
  url: string;
  method: string;
  header: Record<string, string[]>;
  body?: string;
  bodyBase64?: string;
  maxRetries: number;
  notBefore: number;
  createdAt: number;
  queueName?: string;
  topicName?: string;
  scheduleId?: string;
}
