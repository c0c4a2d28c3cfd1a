"""The gRPC access point of RocketMQ 5 (its proxy, in "local mode").

The official 5.x SDKs speak only ``apache.rocketmq.v2.MessagingService`` over gRPC. This
package serves it from inside a broker process: each call becomes the remoting request a
4.x client would have sent (SEND_MESSAGE_V2, HEART_BEAT, END_TRANSACTION ...), handed in
process to the same handlers the broker's remoting ports use. A second front door, not a
second broker: nothing here stores, checks or routes messages on its own.
"""
